package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/monitor"
	"github.com/gray-ml/gray/runtime/session"
	"github.com/gray-ml/gray/runtime/task"
)

// nodeConfig is what a node daemon serves. It mirrors cluster.NodeConfig
// (the "cluster" branch replaces this file's body with that type and
// cluster.ServeNode): nodeConfigFrom builds it from the session file,
// serveNode serves it.
type nodeConfig struct {
	ID, IP            string
	Port              int
	TempDir           string
	Resources         task.Resources
	Token             []byte
	Redis             control.RedisConfig
	ObjectStoreMemory int64
	Head              bool
	HeartbeatInterval time.Duration
}

// nodeConfigFrom builds a node's configuration from its session.
func nodeConfigFrom(s *session.Session) (nodeConfig, error) {
	if net.ParseIP(s.NodeIP) == nil {
		return nodeConfig{}, fmt.Errorf("the session's node IP %q is not an IP address", s.NodeIP)
	}
	if err := session.CheckToken(s.Token); err != nil {
		return nodeConfig{}, err
	}
	return nodeConfig{
		ID:                s.NodeID,
		IP:                s.NodeIP,
		Port:              s.NodePort,
		TempDir:           s.TempDir,
		Resources:         s.Resources,
		Token:             []byte(s.Token),
		Redis:             control.RedisConfig{Addr: s.Address, Password: s.Token},
		ObjectStoreMemory: s.ObjectStoreMemory,
		Head:              s.Head,
		HeartbeatInterval: s.HeartbeatInterval,
	}, nil
}

// serveNode registers the node and keeps it alive in the node table
// until ctx ends; then it tells the cluster that the node stopped, rather
// than letting the monitor find out after its timeout.
func serveNode(ctx context.Context, cfg nodeConfig) error {
	store, err := dialControl(ctx, cfg.Redis)
	if err != nil {
		return err
	}
	defer store.Close()
	hb := &monitor.Heartbeater{
		Store:    store,
		Node:     control.NodeInfo{ID: cfg.ID, IP: cfg.IP, Head: cfg.Head, Resources: cfg.Resources},
		Interval: cfg.HeartbeatInterval,
	}
	if err := hb.Run(ctx); err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := store.MarkDead(stopCtx, cfg.ID, "stopped (gray stop)"); err != nil {
		log.Printf("gray: node %s: %v", cfg.ID, err)
	}
	return nil
}

// dialControl connects to the cluster's Redis, retrying while it does not
// answer (the head may be starting it) but not when it refuses the token.
func dialControl(ctx context.Context, cfg control.RedisConfig) (*control.Redis, error) {
	for {
		store, err := control.DialRedis(ctx, cfg, "")
		if err == nil || errors.Is(err, control.ErrRedisAuth) {
			return store, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
