package task

import (
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/wire"
)

// A lost object's error names its reason, and both the reason and
// ErrObjectLost survive the trip to another process.
func TestLostErrorsKeepTheirReasonAcrossProcesses(t *testing.T) {
	reasons := []error{ErrLostPut, ErrLostActorMethod, ErrLostOwnerDied, ErrLostRetriesExhausted, ErrLostLineageDropped}
	for _, reason := range reasons {
		t.Run(reason.Error(), func(t *testing.T) {
			id := ids.Put(ids.TaskID{7}, 1)
			e := Lost(id, reason, "advice", ErrWorkerDied)
			var le *ObjectLostError
			if !errors.As(e, &le) || le.Object != id {
				t.Fatalf("errors.As to *ObjectLostError: %v", e)
			}
			o := Object{Err: e}
			d := wire.Dec{B: AppendObject(nil, &o)}
			got := DecodeObject(&d).Err
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			for _, want := range []error{ErrObjectLost, reason, ErrWorkerDied} {
				if !errors.Is(e, want) || !errors.Is(got, want) {
					t.Errorf("errors.Is(%v) here %v, after the trip %v; want both", want, errors.Is(e, want), errors.Is(got, want))
				}
			}
			for _, other := range reasons {
				if other != reason && (errors.Is(e, other) || errors.Is(got, other)) {
					t.Errorf("%v also matches the reason %v", e, other)
				}
			}
		})
	}
}
