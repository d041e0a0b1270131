package sdk

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/envs"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// TestEnvServerContract drives the SDK's EnvService in-process: batching,
// automatic resets with final observations, and the errors a confused host
// gets.
func TestEnvServerContract(t *testing.T) {
	ctx := context.Background()
	srv := NewEnvServer(func(cfg envs.Config) (envs.Env, error) { return envs.Make("CartPole-v1", cfg) })
	if _, err := srv.Step(ctx, &pb.StepRequest{Actions: []float64{0}}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Step before Open: %v, want FailedPrecondition", err)
	}
	sp, err := srv.Open(ctx, &pb.OpenEnvRequest{NumEnvs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if sp.NumEnvs != 3 || sp.ActionSpace.GetDiscrete().GetN() != 2 || len(sp.ObservationSpace.GetBox().GetLow()) != 4 {
		t.Errorf("spaces %v, want 3 × (Box of 4, Discrete(2))", sp)
	}
	if _, err := srv.Open(ctx, &pb.OpenEnvRequest{NumEnvs: 3}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("second Open: %v, want FailedPrecondition", err)
	}
	r, err := srv.Reset(ctx, &pb.ResetRequest{Seeds: []int64{1, 2, 3}})
	if err != nil || len(r.Obs) != 12 {
		t.Fatalf("Reset: %d values, %v; want 12", len(r.Obs), err)
	}
	done := 0
	for s := 0; s < 200; s++ {
		st, err := srv.Step(ctx, &pb.StepRequest{Actions: []float64{0, 0, 0}})
		if err != nil {
			t.Fatal(err)
		}
		ended := 0
		for i := range st.Rewards {
			if st.Terminated[i] || st.Truncated[i] {
				ended++
			}
		}
		if len(st.Obs) != 12 || len(st.FinalObs) != 4*ended {
			t.Fatalf("step %d: %d obs values and %d final values for %d ended episodes", s, len(st.Obs), len(st.FinalObs), ended)
		}
		done += ended
	}
	if done < 3 {
		t.Errorf("always pushing left ended %d episodes in 200 steps, want at least 3", done)
	}
	if _, err := srv.Step(ctx, &pb.StepRequest{Actions: []float64{0}}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "got 1 action values for 3 sub-environments") {
		t.Errorf("short actions: %v", err)
	}
	if _, err := srv.Render(ctx, &pb.RenderRequest{Index: 5}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("render index 5 of 3: %v", err)
	}
	if _, err := srv.Close(ctx, &pb.Empty{}); err != nil {
		t.Fatal(err)
	}

	bad := NewEnvServer(func(cfg envs.Config) (envs.Env, error) { return envs.Make("CartPole-v1", envs.Config{"nope": 1}) })
	if _, err := bad.Open(ctx, &pb.OpenEnvRequest{NumEnvs: 1}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "creating sub-environment 0") {
		t.Errorf("a failing creator: %v", err)
	}
}
