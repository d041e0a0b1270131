"""gray_plugin: serve a Python environment to Gray as a go-plugin plugin.

Copy this file and the generated plugins_pb2*.py beside your environment and
call serve_env(name, make_env). It speaks hashicorp/go-plugin's handshake
(one line on stdout), serves the gray.plugins.v1 EnvService over gRPC on a
Unix socket, steps N sub-environments with automatic resets, sends its logs
to the host as JSON lines on stderr, and exits when the host goes away (even
when the host is killed with SIGKILL).

Needs Debian's python3-grpcio and python3-protobuf (run with /usr/bin/python3).

An environment is any object with:
    observation_space  -> discrete(n) or box(low, high, shape)
    action_space       -> the same
    reset(seed)        -> list of floats (the first observation)
    step(action)       -> (obs, reward, terminated, truncated); action is a
                          list of floats (one value, the index, for discrete)
    close()            -> optional
"""

import concurrent.futures
import ctypes
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import plugins_pb2 as pb  # noqa: E402
import plugins_pb2_grpc as pb_grpc  # noqa: E402

# These must match plugins/internal/wire in Gray.
PROTOCOL_VERSION = 1
MAGIC_COOKIE_KEY = "GRAY_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE = "7d3c2f0e-gray-plugins-v1"
HOST_PID_ENV = "GRAY_PLUGIN_HOST_PID"


def discrete(n):
    """The space {0, ..., n-1}."""
    return pb.Space(discrete=pb.Discrete(n=n))


def box(low, high, shape):
    """A box; low and high are numbers or lists of prod(shape) numbers."""
    size = 1
    for d in shape:
        size *= d
    low = list(low) if isinstance(low, (list, tuple)) else [float(low)] * size
    high = list(high) if isinstance(high, (list, tuple)) else [float(high)] * size
    return pb.Space(box=pb.Box(low=low, high=high, shape=list(shape)))


_MASK = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def auto_reset_seed(seed, k):
    """The seed of episode k >= 1 after reset(seed): Gray's envs.AutoResetSeed,
    so that a run is reproducible whatever serves the environment."""
    x = _splitmix64((seed & _MASK) ^ _splitmix64(k & _MASK))
    return x - (1 << 64) if x >= 1 << 63 else x


def space_size(space):
    if space.HasField("discrete"):
        return 1
    return len(space.box.low)


def log(level, message, **fields):
    """Write one log line the host re-logs at its level."""
    entry = {
        "@level": level,
        "@message": message,
        "@module": _module,
        "@timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    entry.update(fields)
    sys.stderr.write(json.dumps(entry) + "\n")
    sys.stderr.flush()


_module = "python-plugin"


def _guard_parent():
    """Exit when the host dies: PR_SET_PDEATHSIG on Linux, plus a watchdog on
    the parent pid (a re-parented plugin has lost its host)."""
    ppid = os.getppid()
    want = os.environ.pop(HOST_PID_ENV, None)  # not for our children
    if want and want.isdigit() and int(want) != ppid:
        os._exit(3)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except OSError:
            pass
    if os.getppid() != ppid:
        os._exit(3)

    def watch():
        while True:
            time.sleep(0.25)
            if os.getppid() != ppid:
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


class _EnvServicer(pb_grpc.EnvServiceServicer):
    def __init__(self, make_env):
        self.make_env = make_env
        self.lock = threading.Lock()
        self.envs = None

    def _need_open(self, context):
        if self.envs is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "environment not opened")

    def Open(self, request, context):
        with self.lock:
            if self.envs is not None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "Open called twice")
            cfg = json.loads(request.config_json) if request.config_json else None
            try:
                self.envs = [self.make_env(cfg or {}) for _ in range(request.num_envs)]
            except Exception as e:  # the host shows the message
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "creating the environment: %r" % e)
            first = self.envs[0]
            self.obs_size = space_size(first.observation_space)
            self.seeds = [0] * len(self.envs)
            self.episodes = [0] * len(self.envs)
            self.spaces = pb.EnvSpaces(
                observation_space=first.observation_space,
                action_space=first.action_space,
                num_envs=len(self.envs),
                can_render=False,
            )
            self.act_size = space_size(first.action_space)
            return self.spaces

    def Spaces(self, request, context):
        with self.lock:
            self._need_open(context)
            return self.spaces

    def Reset(self, request, context):
        with self.lock:
            self._need_open(context)
            n = len(self.envs)
            if len(request.seeds) != n:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "got %d seeds for %d sub-environments" % (len(request.seeds), n))
            obs = []
            for i, (env, seed) in enumerate(zip(self.envs, request.seeds)):
                obs.extend(env.reset(seed))
                self.seeds[i], self.episodes[i] = seed, 0
            return pb.ResetResponse(obs=obs)

    def Step(self, request, context):
        with self.lock:
            self._need_open(context)
            k = self.act_size
            acts = request.actions
            if len(acts) != k * len(self.envs):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "wrong number of action values")
            obs, rewards, terms, truncs, finals = [], [], [], [], []
            for i, env in enumerate(self.envs):
                try:
                    o, r, term, trunc = env.step(acts[i * k:(i + 1) * k])
                    if term or trunc:
                        finals.extend(o)
                        self.episodes[i] += 1
                        o = env.reset(auto_reset_seed(self.seeds[i], self.episodes[i]))
                except Exception as e:
                    context.abort(grpc.StatusCode.INTERNAL, "step of sub-environment %d: %r" % (i, e))
                obs.extend(o)
                rewards.append(r)
                terms.append(bool(term))
                truncs.append(bool(trunc))
            return pb.StepResponse(obs=obs, rewards=rewards, terminated=terms, truncated=truncs, final_obs=finals)

    def Close(self, request, context):
        with self.lock:
            for env in self.envs or []:
                close = getattr(env, "close", None)
                if close:
                    close()
            self.envs = None
            return pb.Empty()


class _InfoServicer(pb_grpc.InfoServicer):
    def __init__(self, name):
        self.name = name

    def Describe(self, request, context):
        return pb.Description(kind="env", protocol_version=PROTOCOL_VERSION, name=self.name)


def _raw_handler(service, method, fn):
    """A handler for a service we have no generated stubs for: go-plugin's
    health check and controller take and answer tiny fixed messages."""
    ident = lambda b: b  # noqa: E731
    return grpc.method_handlers_generic_handler(
        service, {method: grpc.unary_unary_rpc_method_handler(fn, request_deserializer=ident, response_serializer=ident)})


def serve_env(name, make_env):
    """Serve make_env(config) -> environment until the host shuts us down."""
    global _module
    _module = name
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This is a Gray plugin: it is started by Gray (train --env plugin:%s), not run by hand.\n" % sys.argv[0])
        sys.exit(1)
    _guard_parent()

    done = threading.Event()
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_InfoServicer_to_server(_InfoServicer(name), server)
    pb_grpc.add_EnvServiceServicer_to_server(_EnvServicer(make_env), server)
    # grpc.health.v1.Health/Check answers HealthCheckResponse{status: SERVING}.
    server.add_generic_rpc_handlers((
        _raw_handler("grpc.health.v1.Health", "Check", lambda req, ctx: b"\x08\x01"),
        _raw_handler("plugin.GRPCController", "Shutdown", lambda req, ctx: (done.set(), b"")[1]),
    ))
    sockdir = tempfile.mkdtemp(prefix="gray-plugin-")
    sock = os.path.join(sockdir, "plugin.sock")
    server.add_insecure_port("unix:" + sock)
    server.start()
    # The handshake: core protocol | app protocol | network | address | grpc.
    sys.stdout.write("1|%d|unix|%s|grpc\n" % (PROTOCOL_VERSION, sock))
    sys.stdout.flush()
    log("info", "serving", socket=sock)
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    server.stop(grace=0.5)
    shutil.rmtree(sockdir, ignore_errors=True)
