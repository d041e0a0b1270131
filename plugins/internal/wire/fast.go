package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The fast step transport (EnvService.OpenFastStep) carries Step alone over
// a stream socket, one request and one answer at a time, little-endian:
//
//	request: u32 count, count × f64 actions
//	answer:  u8 status
//	         status 0: u32 nObs, u32 nEnvs, u32 nFinal,
//	                   nObs × f64 obs, nEnvs × f64 rewards,
//	                   nEnvs × u8 flags (bit 0 terminated, bit 1 truncated),
//	                   nFinal × f64 final observations
//	         status 1: u32 length, the error message in UTF-8
//
// It exists because a gRPC call hands each message through several
// goroutines on both sides; here the host's goroutine writes and reads the
// socket itself.

// maxFastValues bounds a frame's counts, so that a corrupt length cannot
// make either side allocate without limit (2^26 float64s = 512 MiB).
const maxFastValues = 1 << 26

// FastWriter encodes frames into a reusable buffer and writes each with one
// call.
type FastWriter struct {
	W   io.Writer
	buf []byte
}

func (w *FastWriter) u32(v int) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(v))
}

func (w *FastWriter) floats(xs []float64) {
	for _, x := range xs {
		w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(x))
	}
}

func (w *FastWriter) flush() error {
	_, err := w.W.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// WriteRequest sends the actions of one step.
func (w *FastWriter) WriteRequest(actions []float64) error {
	w.u32(len(actions))
	w.floats(actions)
	return w.flush()
}

// WriteAnswer sends a successful step's outcome.
func (w *FastWriter) WriteAnswer(obs, rewards []float64, terminated, truncated []bool, final []float64) error {
	w.buf = append(w.buf, 0)
	w.u32(len(obs))
	w.u32(len(rewards))
	w.u32(len(final))
	w.floats(obs)
	w.floats(rewards)
	for i := range rewards {
		var f byte
		if i < len(terminated) && terminated[i] {
			f |= 1
		}
		if i < len(truncated) && truncated[i] {
			f |= 2
		}
		w.buf = append(w.buf, f)
	}
	w.floats(final)
	return w.flush()
}

// WriteError sends a failed step's message.
func (w *FastWriter) WriteError(msg string) error {
	w.buf = append(w.buf, 1)
	w.u32(len(msg))
	w.buf = append(w.buf, msg...)
	return w.flush()
}

// FastReader decodes frames.
type FastReader struct {
	R   *bufio.Reader
	buf []byte
}

func (r *FastReader) read(n int) ([]byte, error) {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	_, err := io.ReadFull(r.R, r.buf)
	return r.buf, err
}

func (r *FastReader) u32() (int, error) {
	b, err := r.read(4)
	if err != nil {
		return 0, err
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > maxFastValues {
		return 0, fmt.Errorf("fast step frame announces %d values (corrupt stream?)", n)
	}
	return n, nil
}

// floats reads n float64s into a new slice (the caller owns it).
func (r *FastReader) floats(n int) ([]float64, error) {
	b, err := r.read(8 * n)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

// ReadRequest reads one step's actions; io.EOF means the host hung up.
func (r *FastReader) ReadRequest() ([]float64, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	return r.floats(n)
}

// ErrFastStep is a step error reported by the plugin over the fast path.
type ErrFastStep struct{ Msg string }

func (e *ErrFastStep) Error() string { return e.Msg }

// ReadAnswer reads one step's outcome, or the plugin's error as
// *ErrFastStep.
func (r *FastReader) ReadAnswer() (obs, rewards []float64, terminated, truncated []bool, final []float64, err error) {
	st, err := r.read(1)
	if err != nil {
		return
	}
	switch st[0] {
	case 0:
	case 1:
		var n int
		if n, err = r.u32(); err != nil {
			return
		}
		var msg []byte
		if msg, err = r.read(n); err != nil {
			return
		}
		err = &ErrFastStep{Msg: string(msg)}
		return
	default:
		err = fmt.Errorf("fast step answer with status byte %d (corrupt stream?)", st[0])
		return
	}
	var nObs, nEnvs, nFinal int
	if nObs, err = r.u32(); err != nil {
		return
	}
	if nEnvs, err = r.u32(); err != nil {
		return
	}
	if nFinal, err = r.u32(); err != nil {
		return
	}
	if obs, err = r.floats(nObs); err != nil {
		return
	}
	if rewards, err = r.floats(nEnvs); err != nil {
		return
	}
	var flags []byte
	if flags, err = r.read(nEnvs); err != nil {
		return
	}
	terminated, truncated = make([]bool, nEnvs), make([]bool, nEnvs)
	for i, f := range flags {
		terminated[i], truncated[i] = f&1 != 0, f&2 != 0
	}
	final, err = r.floats(nFinal)
	return
}

// IsEOF reports whether err means the other side closed the stream.
func IsEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
