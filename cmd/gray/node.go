package main

import (
	"context"
	"fmt"
	"net"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
)

// nodeConfigFrom builds a node's configuration from its session.
func nodeConfigFrom(s *session.Session) (cluster.NodeConfig, error) {
	if net.ParseIP(s.NodeIP) == nil {
		return cluster.NodeConfig{}, fmt.Errorf("the session's node IP %q is not an IP address", s.NodeIP)
	}
	if err := session.CheckToken(s.Token); err != nil {
		return cluster.NodeConfig{}, err
	}
	return cluster.NodeConfig{
		ID:                s.NodeID,
		IP:                s.NodeIP,
		Port:              s.NodePort,
		TempDir:           s.TempDir,
		Resources:         s.Resources,
		Token:             []byte(s.Token),
		Redis:             control.RedisConfig{Addr: s.Address, Password: s.Token},
		ObjectStoreMemory: s.ObjectStoreMemory,
		MaxCache:          s.MaxCache,
		Head:              s.Head,
		HeartbeatInterval: s.HeartbeatInterval,
		HeadTimeout:       s.NodeTimeout,
	}, nil
}

// serveNode runs the node daemon (runtime/cluster) until ctx ends; then it
// tells the cluster that the node stopped, rather than letting the monitor
// find out after its timeout.
func serveNode(ctx context.Context, cfg cluster.NodeConfig) error {
	return cluster.ServeNode(ctx, cfg)
}
