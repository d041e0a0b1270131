package task

import "github.com/gray-ml/gray/runtime/wire"

// argKeep is or-ed into an argument's tag byte on the wire when Arg.Keep.
const argKeep = 4

// MsgReleaseShared (W→D: object ID) says an actor released one
// gray.Shared argument it kept. It has a number well apart from the
// sequence in proto.go so that both can grow.
const MsgReleaseShared byte = 64

// appendRes encodes an optional resource request: 0, or 1 and the amounts.
func appendRes(b []byte, r *Resources) []byte {
	if r == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = wire.AppendFloat(b, r.CPU)
	b = wire.AppendFloat(b, r.GPU)
	b = wire.AppendUvarint(b, uint64(len(r.Custom)))
	for k, v := range r.Custom {
		b = wire.AppendString(b, k)
		b = wire.AppendFloat(b, v)
	}
	return b
}

// decodeRes decodes what appendRes wrote.
func decodeRes(d *wire.Dec) *Resources {
	if d.Byte() != 1 {
		return nil
	}
	r := &Resources{CPU: d.Float(), GPU: d.Float()}
	n := d.Count()
	if n > 0 {
		r.Custom = make(map[string]float64, n)
		for range n {
			k := d.String()
			r.Custom[k] = d.Float()
		}
	}
	return r
}

// Res returns the resources the task s of entry e reserves: the actor's
// own request when the spec carries one, else the registered one.
func Res(s *Spec, e *Entry) Resources {
	if r := s.OwnRes(); r != nil {
		return *r
	}
	return e.Res
}
