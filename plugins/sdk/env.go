package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// EnvCreator makes one sub-environment from the environment's config; it is
// called once per sub-environment the host asks for.
type EnvCreator func(cfg envs.Config) (envs.Env, error)

// ServeEnv serves the environment made by create as a Gray environment
// plugin and returns when the host closes it. name appears in the host's
// logs and errors. Call it from main; it does not return early on error
// (errors reach the host as the failing call's error).
func ServeEnv(name string, create EnvCreator) {
	srv := NewEnvServer(create)
	serve(wire.KindEnv, name, func(s *grpc.Server) { pb.RegisterEnvServiceServer(s, srv) })
}

// NewEnvServer returns the EnvService implementation ServeEnv uses, for
// tests and for programs that run their own gRPC server.
func NewEnvServer(create EnvCreator) pb.EnvServiceServer {
	return &envServer{create: create}
}

// envServer steps N sub-environments with automatic resets (envs.NewVector)
// and packs every batch into flat arrays.
type envServer struct {
	pb.UnimplementedEnvServiceServer
	create EnvCreator

	mu      sync.Mutex // the host calls one at a time; this makes it certain
	subs    []envs.Env
	vec     envs.Vector
	spaces  *pb.EnvSpaces
	obsSize int
	actSize int
	rows    [][]float64     // reused action rows
	out     envs.VectorStep // the latest step, reused by stepInto
	fastDir string          // the fast step socket's folder, "" when none
	fastLn  net.Listener
}

func (s *envServer) Open(_ context.Context, req *pb.OpenEnvRequest) (*pb.EnvSpaces, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vec != nil {
		return nil, status.Error(codes.FailedPrecondition, "Open called twice")
	}
	n := int(req.NumEnvs)
	if n < 1 {
		return nil, status.Errorf(codes.InvalidArgument, "need at least one sub-environment, got %d", n)
	}
	var cfg envs.Config
	if len(req.ConfigJson) > 0 {
		if err := json.Unmarshal(req.ConfigJson, &cfg); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "env config is not a JSON object: %v", err)
		}
	}
	subs := make([]envs.Env, 0, n)
	closeAll := func() {
		for _, e := range subs {
			_ = e.Close()
		}
	}
	for i := 0; i < n; i++ {
		e, err := s.create(cfg)
		if err == nil && e == nil {
			err = errors.New("creator returned a nil environment")
		}
		if err != nil {
			closeAll()
			return nil, status.Errorf(codes.InvalidArgument, "creating sub-environment %d: %v", i, err)
		}
		subs = append(subs, e)
	}
	obs, err := wire.SpaceToProto(subs[0].ObservationSpace())
	if err != nil {
		closeAll()
		return nil, status.Errorf(codes.InvalidArgument, "observation space: %v", err)
	}
	act, err := wire.SpaceToProto(subs[0].ActionSpace())
	if err != nil {
		closeAll()
		return nil, status.Errorf(codes.InvalidArgument, "action space: %v", err)
	}
	vec, err := envs.NewVector(subs...)
	if err != nil {
		closeAll()
		return nil, status.Error(codes.Internal, err.Error())
	}
	_, canRender := subs[0].(envs.Renderer)
	s.subs, s.vec = subs, vec
	s.obsSize, s.actSize = subs[0].ObservationSpace().Size(), subs[0].ActionSpace().Size()
	s.spaces = &pb.EnvSpaces{ObservationSpace: obs, ActionSpace: act, NumEnvs: int32(n), CanRender: canRender}
	s.rows = make([][]float64, n)
	return s.spaces, nil
}

func (s *envServer) opened() error {
	if s.vec == nil {
		return status.Error(codes.FailedPrecondition, "environment not opened (the host must call Open first)")
	}
	return nil
}

func (s *envServer) Spaces(context.Context, *pb.Empty) (*pb.EnvSpaces, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opened(); err != nil {
		return nil, err
	}
	return s.spaces, nil
}

func (s *envServer) Reset(_ context.Context, req *pb.ResetRequest) (*pb.ResetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opened(); err != nil {
		return nil, err
	}
	obs, err := s.vec.Reset(req.Seeds)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	out := make([]float64, 0, len(obs)*s.obsSize)
	for _, o := range obs {
		out = append(out, o...)
	}
	return &pb.ResetResponse{Obs: out}, nil
}

func (s *envServer) Step(_ context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step(req.Actions)
}

// step runs one batched step and packs it for gRPC; the caller holds s.mu.
func (s *envServer) step(actions []float64) (*pb.StepResponse, error) {
	if err := s.stepInto(actions); err != nil {
		return nil, err
	}
	st := &s.out
	n := len(st.Obs)
	resp := &pb.StepResponse{
		Obs:        make([]float64, 0, n*s.obsSize),
		Rewards:    append([]float64(nil), st.Rewards...),
		Terminated: append([]bool(nil), st.Terminated...),
		Truncated:  append([]bool(nil), st.Truncated...),
	}
	for i, o := range st.Obs {
		resp.Obs = append(resp.Obs, o...)
		if st.FinalObs[i] != nil {
			resp.FinalObs = append(resp.FinalObs, st.FinalObs[i]...)
		}
	}
	return resp, nil
}

// stepInto runs one batched step into s.out, without allocating when the
// sub-environments step in place (envs.InPlaceStepper, as the built-in
// environments do); s.out's rows stay valid until the next step. The
// caller holds s.mu.
func (s *envServer) stepInto(actions []float64) error {
	if err := s.opened(); err != nil {
		return err
	}
	n := len(s.subs)
	if len(actions) != n*s.actSize {
		return status.Errorf(codes.InvalidArgument, "got %d action values for %d sub-environments of action size %d",
			len(actions), n, s.actSize)
	}
	for i := range s.rows {
		s.rows[i] = actions[i*s.actSize : (i+1)*s.actSize : (i+1)*s.actSize]
	}
	var err error
	if ip, ok := s.vec.(envs.InPlaceStepper); ok {
		err = ip.StepInto(s.rows, &s.out)
	} else {
		s.out, err = s.vec.Step(s.rows)
	}
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// OpenFastStep listens on a Unix socket in a private folder and serves step
// frames on the first connection (see wire.FastWriter for the format).
func (s *envServer) OpenFastStep(context.Context, *pb.Empty) (*pb.FastStep, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opened(); err != nil {
		return nil, err
	}
	if s.fastDir != "" {
		return nil, status.Error(codes.FailedPrecondition, "OpenFastStep called twice")
	}
	dir, err := os.MkdirTemp("", "gray-fast-step-")
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "fast step socket: %v", err)
	}
	path := filepath.Join(dir, "step.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, status.Errorf(codes.Unavailable, "fast step socket: %v", err)
	}
	s.fastDir, s.fastLn = dir, ln
	go s.serveFast(ln, dir) // ends when the host hangs up or Close closes ln
	return &pb.FastStep{Network: "unix", Address: path}, nil
}

func (s *envServer) serveFast(ln net.Listener, dir string) {
	conn, err := ln.Accept()
	// Once connected (or failed) the path is no longer needed: removing it
	// now leaves nothing behind however the process ends.
	ln.Close()
	os.RemoveAll(dir)
	if err != nil {
		return
	}
	defer conn.Close()
	// The host's first frame is either an ordinary request or, from a host
	// offering shared memory, an empty one carrying the region (see
	// wire/shm.go). Read its count with the ancillary data.
	first, fd, err := wire.ReadHello(conn)
	if err != nil {
		return
	}
	var rw io.ReadWriter = conn
	if f := blockingFile(conn); f != nil {
		defer f.Close()
		rw = f
	}
	r := wire.FastReader{R: bufio.NewReaderSize(rw, 64<<10)}
	w := wire.FastWriter{W: rw}
	var actions []float64
	if fd >= 0 {
		f := os.NewFile(uintptr(fd), "gray-step")
		sh, err := wire.MapShared(f)
		f.Close() // the mapping stays
		if err == nil && os.Getenv(NoSharedMemoryEnv) != "" {
			sh.Close()
			err = fmt.Errorf("shared memory declined (%s is set)", NoSharedMemoryEnv)
		}
		if err != nil {
			// Socket stepping goes on; the host reads this as a refusal.
			if w.WriteError(err.Error()) != nil {
				return
			}
		} else {
			if _, err := rw.Write([]byte{wire.ShmAccepted}); err != nil {
				sh.Close()
				return
			}
			s.serveShared(sh)
			return
		}
	} else if first >= 0 {
		if actions, err = r.ReadRequestBody(first, actions); err != nil || s.answer(&w, actions) != nil {
			return
		}
	}
	for {
		actions, err = r.ReadRequestInto(actions)
		if err != nil {
			return // the host hung up (or broke the stream): nothing to answer
		}
		if s.answer(&w, actions) != nil {
			return
		}
	}
}

// NoSharedMemoryEnv, set to anything in a plugin's environment, makes the
// SDK decline the host's shared step region and answer steps over the fast
// step socket, as plugins built with older SDKs do (for debugging and tests).
const NoSharedMemoryEnv = "GRAY_PLUGIN_NO_SHARED_MEMORY"

// answer steps the sub-environments and writes the outcome, or the step's
// error, as one frame.
func (s *envServer) answer(w *wire.FastWriter, actions []float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stepInto(actions); err != nil {
		return w.WriteError(status.Convert(err).Message())
	}
	st := &s.out
	return w.WriteAnswerRows(st.Obs, st.Rewards, st.Terminated, st.Truncated, st.FinalObs)
}

// serveShared answers step requests through the shared region until the
// host closes it (or Close stops the server, or the host dies: then the
// process ends with it).
func (s *envServer) serveShared(sh *wire.Shared) {
	defer sh.Close()
	w := wire.FastWriter{W: sh}
	r := wire.FastReader{R: bufio.NewReaderSize(nil, 64<<10)}
	stopped := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.vec == nil {
			return wire.ErrShmClosed
		}
		return nil
	}
	var actions []float64
	for {
		rd, err := sh.Wait(stopped)
		if err != nil {
			return
		}
		r.R.Reset(rd)
		if actions, err = r.ReadRequestInto(actions); err != nil {
			err = w.WriteError(fmt.Sprintf("bad step request in the shared region: %v", err))
		} else {
			err = s.answer(&w, actions)
		}
		if errors.Is(err, wire.ErrFrameTooLarge) {
			err = w.WriteError(truncate(fmt.Sprintf("the step's answer does not fit the shared step region (%v); are observations larger than the declared space?", err), sh.Cap()-5))
		}
		if err != nil {
			return
		}
	}
}

func truncate(msg string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(msg) > n {
		return msg[:n]
	}
	return msg
}

// blockingFile returns a blocking duplicate of the fast step connection,
// or nil. The serving goroutine then waits for the host in a plain read
// system call, which the kernel wakes directly, instead of parking in Go's
// network poller, whose wake-up goes through the scheduler: a measurable
// part of a round trip on a busy machine. The plugin serves one host and
// needs no deadline (it exits with its parent).
func blockingFile(conn net.Conn) *os.File {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	f, err := uc.File()
	if err != nil {
		return nil
	}
	f.Fd() // puts the duplicate in blocking mode
	return f
}

// closeFast stops the fast step socket; the caller holds s.mu.
func (s *envServer) closeFast() {
	if s.fastLn != nil {
		s.fastLn.Close()
		os.RemoveAll(s.fastDir)
		s.fastLn, s.fastDir = nil, ""
	}
}

func (s *envServer) Close(context.Context, *pb.Empty) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeFast()
	if s.vec == nil {
		return &pb.Empty{}, nil
	}
	err := s.vec.Close()
	s.vec, s.subs = nil, nil
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.Empty{}, nil
}

func (s *envServer) Render(_ context.Context, req *pb.RenderRequest) (*pb.RenderResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.opened(); err != nil {
		return nil, err
	}
	i := int(req.Index)
	if i < 0 || i >= len(s.subs) {
		return nil, status.Errorf(codes.InvalidArgument, "render index %d outside [0, %d)", i, len(s.subs))
	}
	r, ok := s.subs[i].(envs.Renderer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this environment cannot render")
	}
	img, err := r.Render()
	if err != nil {
		return nil, status.Error(codes.Internal, fmt.Sprintf("render: %v", err))
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, status.Error(codes.Internal, fmt.Sprintf("encoding PNG: %v", err))
	}
	return &pb.RenderResponse{Png: buf.Bytes()}, nil
}
