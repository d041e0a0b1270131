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

// WriteAnswerRows sends a successful step's outcome from row slices, as an
// envs.VectorStep holds it (FinalObs[i] nil unless sub-environment i's
// episode ended), without first packing the rows into flat arrays.
func (w *FastWriter) WriteAnswerRows(obs [][]float64, rewards []float64, terminated, truncated []bool, final [][]float64) error {
	nObs, nFinal := 0, 0
	for i, o := range obs {
		nObs += len(o)
		if i < len(final) {
			nFinal += len(final[i])
		}
	}
	if need := 13 + 8*(nObs+len(rewards)+nFinal) + len(rewards); cap(w.buf) < need {
		w.buf = make([]byte, 0, need)
	}
	w.buf = append(w.buf, 0)
	w.u32(nObs)
	w.u32(len(rewards))
	w.u32(nFinal)
	for _, o := range obs {
		w.floats(o)
	}
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
	for _, f := range final {
		w.floats(f)
	}
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

// ReadRequest reads one step's actions; io.EOF means the host hung up.
func (r *FastReader) ReadRequest() ([]float64, error) {
	return r.ReadRequestInto(nil)
}

// ReadRequestInto reads one step's actions into dst's array when it is
// large enough (a serving loop reuses one buffer), else into a new slice.
func (r *FastReader) ReadRequestInto(dst []float64) ([]float64, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	return r.ReadRequestBody(n, dst)
}

// ReadRequestBody reads the n actions of a request whose count was read
// already (the plugin reads a connection's first count itself, to see the
// shared-memory hello), into dst's array when it is large enough.
func (r *FastReader) ReadRequestBody(n int, dst []float64) ([]float64, error) {
	if n > maxFastValues {
		return nil, fmt.Errorf("fast step frame announces %d values (corrupt stream?)", n)
	}
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	return dst, r.floatsInto(dst)
}

// floatsInto reads len(dst) float64s into dst.
func (r *FastReader) floatsInto(dst []float64) error {
	b, err := r.read(8 * len(dst))
	if err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
}

// ErrFastStep is a step error reported by the plugin over the fast path.
type ErrFastStep struct{ Msg string }

// Error implements error: the plugin's own message.
func (e *ErrFastStep) Error() string { return e.Msg }

// FastAnswer is one step's outcome as ReadAnswerInto decodes it. Obs,
// Rewards and Final share one array and Terminated and Truncated another,
// both new for every answer: the caller owns them.
type FastAnswer struct {
	Obs, Rewards, Final   []float64
	Terminated, Truncated []bool
}

// ReadAnswerInto reads one step's outcome into a, or the plugin's error as
// *ErrFastStep, with two allocations whatever the batch size.
func (r *FastReader) ReadAnswerInto(a *FastAnswer) error {
	st, err := r.read(1)
	if err != nil {
		return err
	}
	switch st[0] {
	case 0:
	case 1:
		n, err := r.u32()
		if err != nil {
			return err
		}
		msg, err := r.read(n)
		if err != nil {
			return err
		}
		return &ErrFastStep{Msg: string(msg)}
	default:
		return fmt.Errorf("fast step answer with status byte %d (corrupt stream?)", st[0])
	}
	hdr, err := r.read(12)
	if err != nil {
		return err
	}
	nObs := int(binary.LittleEndian.Uint32(hdr))
	nEnvs := int(binary.LittleEndian.Uint32(hdr[4:]))
	nFinal := int(binary.LittleEndian.Uint32(hdr[8:]))
	if nObs > maxFastValues || nEnvs > maxFastValues || nFinal > maxFastValues {
		return fmt.Errorf("fast step frame announces %d, %d and %d values (corrupt stream?)", nObs, nEnvs, nFinal)
	}
	floats := make([]float64, nObs+nEnvs+nFinal)
	a.Obs = floats[:nObs:nObs]
	a.Rewards = floats[nObs : nObs+nEnvs : nObs+nEnvs]
	a.Final = floats[nObs+nEnvs:]
	if err := r.floatsInto(a.Obs); err != nil {
		return err
	}
	if err := r.floatsInto(a.Rewards); err != nil {
		return err
	}
	flags, err := r.read(nEnvs)
	if err != nil {
		return err
	}
	bools := make([]bool, 2*nEnvs)
	a.Terminated, a.Truncated = bools[:nEnvs:nEnvs], bools[nEnvs:]
	for i, f := range flags {
		a.Terminated[i], a.Truncated[i] = f&1 != 0, f&2 != 0
	}
	return r.floatsInto(a.Final)
}

// ReadAnswer reads one step's outcome, or the plugin's error as
// *ErrFastStep.
func (r *FastReader) ReadAnswer() (obs, rewards []float64, terminated, truncated []bool, final []float64, err error) {
	var a FastAnswer
	err = r.ReadAnswerInto(&a)
	return a.Obs, a.Rewards, a.Terminated, a.Truncated, a.Final, err
}

// IsEOF reports whether err means the other side closed the stream.
func IsEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
