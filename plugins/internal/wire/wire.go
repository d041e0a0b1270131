// Package wire holds what the host side (package plugins) and the plugin
// side (package plugins/sdk) must agree on: the go-plugin handshake, the
// plugin set and the conversion of spaces to and from their protobuf form.
package wire

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/gray-ml/gray/envs"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// ProtocolVersion is the version of the gray.plugins.v1 contracts. The host
// refuses a plugin that announces another version in its handshake.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake every Gray plugin answers. The magic
// cookie only tells a plugin that it was started by Gray (and not run by hand);
// it is not a security measure.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "GRAY_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "7d3c2f0e-gray-plugins-v1",
}

// HostPIDEnv names the environment variable through which the host tells a
// plugin its process id, so that the plugin can tell at start whether its
// host already died (it was re-parented before it could watch).
const HostPIDEnv = "GRAY_PLUGIN_HOST_PID"

// PluginName is the single key of Gray's go-plugin plugin set. The kind of a
// plugin (env, model, distribution, agent) is reported by its Info service.
const PluginName = "gray"

// Kinds of plugins, as reported by the Info service.
const (
	KindEnv          = "env"
	KindModel        = "model"
	KindDistribution = "distribution"
	KindAgent        = "agent"
)

// Plugin is Gray's go-plugin plugin: on the plugin side Register adds the
// services to the gRPC server; on the host side GRPCClient hands back the
// connection, from which the host builds the stubs it needs.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Register adds the plugin's services (plugin side only).
	Register func(s *grpc.Server)
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Register == nil {
		return fmt.Errorf("wire: plugin has no services to register")
	}
	p.Register(s)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// Set is the plugin set both sides pass to go-plugin.
func Set(register func(s *grpc.Server)) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &Plugin{Register: register}}
}

// SpaceToProto converts a Discrete or Box space.
func SpaceToProto(s envs.Space) (*pb.Space, error) {
	switch s := s.(type) {
	case envs.Discrete:
		return &pb.Space{Kind: &pb.Space_Discrete{Discrete: &pb.Discrete{N: int64(s.N)}}}, nil
	case *envs.Discrete:
		return SpaceToProto(*s)
	case envs.Box:
		shape := make([]int64, len(s.Dims))
		for i, d := range s.Dims {
			shape[i] = int64(d)
		}
		return &pb.Space{Kind: &pb.Space_Box{Box: &pb.Box{Low: s.Low, High: s.High, Shape: shape}}}, nil
	case *envs.Box:
		return SpaceToProto(*s)
	case nil:
		return nil, fmt.Errorf("space is nil")
	default:
		return nil, fmt.Errorf("space %s of type %T cannot cross a plugin boundary (only Discrete and Box can)", s, s)
	}
}

// SpaceFromProto converts a space received from the other side, checking
// that it is well formed.
func SpaceFromProto(s *pb.Space) (envs.Space, error) {
	switch k := s.GetKind().(type) {
	case *pb.Space_Discrete:
		if k.Discrete.N < 1 || k.Discrete.N > math.MaxInt32 {
			return nil, fmt.Errorf("a Discrete space with %d elements (need at least 1)", k.Discrete.N)
		}
		return envs.Discrete{N: int(k.Discrete.N)}, nil
	case *pb.Space_Box:
		b := k.Box
		if len(b.Low) != len(b.High) {
			return nil, fmt.Errorf("a Box space with %d low bounds but %d high bounds", len(b.Low), len(b.High))
		}
		size := int64(1)
		dims := make([]int, len(b.Shape))
		for i, d := range b.Shape {
			if d < 1 {
				return nil, fmt.Errorf("a Box space with shape %v (dimensions must be positive)", b.Shape)
			}
			size *= d
			dims[i] = int(d)
		}
		if len(dims) == 0 {
			dims = []int{len(b.Low)}
			size = int64(len(b.Low))
		}
		if size != int64(len(b.Low)) || size == 0 {
			return nil, fmt.Errorf("a Box space of shape %v holds %d values, but %d bounds were given", dims, size, len(b.Low))
		}
		for i := range b.Low {
			if math.IsNaN(b.Low[i]) || math.IsNaN(b.High[i]) || b.Low[i] > b.High[i] {
				return nil, fmt.Errorf("a Box space with bounds [%v, %v] in dimension %d", b.Low[i], b.High[i], i)
			}
		}
		return envs.Box{Low: b.Low, High: b.High, Dims: dims}, nil
	default:
		return nil, fmt.Errorf("space is missing (neither Discrete nor Box)")
	}
}
