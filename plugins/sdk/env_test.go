package sdk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/internal/wire"
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

// TestFastStepNegotiation: the SDK's fast step socket serves a host that
// sends ordinary frames (an older host) and one that offers a shared step
// region, which it accepts and steps through.
func TestFastStepNegotiation(t *testing.T) {
	ctx := context.Background()
	for _, offer := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", offer), func(t *testing.T) {
			if offer && !wire.ShmSupported {
				t.Skip("no shared-memory step transport on this platform")
			}
			srv := NewEnvServer(func(cfg envs.Config) (envs.Env, error) { return envs.Make("CartPole-v1", cfg) })
			if _, err := srv.Open(ctx, &pb.OpenEnvRequest{NumEnvs: 2}); err != nil {
				t.Fatal(err)
			}
			defer srv.Close(ctx, &pb.Empty{})
			if _, err := srv.Reset(ctx, &pb.ResetRequest{Seeds: []int64{1, 2}}); err != nil {
				t.Fatal(err)
			}
			fs, err := srv.(*envServer).OpenFastStep(ctx, &pb.Empty{})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial(fs.Network, fs.Address)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			r := wire.FastReader{R: bufio.NewReader(conn)}
			w := wire.FastWriter{W: conn}
			var sh *wire.Shared
			if offer {
				var f *os.File
				sh, f, err = wire.CreateShared(4+8*2, 4096, wire.DefaultSpin)
				if err != nil {
					t.Fatal(err)
				}
				defer sh.Close()
				err = wire.SendHello(conn.(*net.UnixConn), f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if b, err := r.R.ReadByte(); err != nil || b != wire.ShmAccepted {
					t.Fatalf("answer to the shared-memory offer: %d, %v; want %d", b, err, wire.ShmAccepted)
				}
				w.W = sh
			}
			for s := 0; s < 30; s++ {
				if err := w.WriteRequest([]float64{0, 1}); err != nil {
					t.Fatal(err)
				}
				if sh != nil {
					rd, err := sh.Wait(nil)
					if err != nil {
						t.Fatal(err)
					}
					r.R.Reset(rd)
				}
				var a wire.FastAnswer
				if err := r.ReadAnswerInto(&a); err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
				if len(a.Obs) != 8 || len(a.Rewards) != 2 || len(a.Final) != 4*countDone(a) {
					t.Fatalf("step %d: answer %+v", s, a)
				}
			}
			// A bad request gets the step's error, over either transport.
			if err := w.WriteRequest([]float64{0}); err != nil {
				t.Fatal(err)
			}
			if sh != nil {
				rd, err := sh.Wait(nil)
				if err != nil {
					t.Fatal(err)
				}
				r.R.Reset(rd)
			}
			var se *wire.ErrFastStep
			if err := r.ReadAnswerInto(&wire.FastAnswer{}); !errors.As(err, &se) || !strings.Contains(se.Msg, "got 1 action values") {
				t.Fatalf("short request: %v", err)
			}
		})
	}
}

func countDone(a wire.FastAnswer) int {
	n := 0
	for i := range a.Terminated {
		if a.Terminated[i] || a.Truncated[i] {
			n++
		}
	}
	return n
}
