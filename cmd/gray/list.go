package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clusterFlags are how status and list name a cluster: --address (default
// $GRAY_ADDRESS, or the cluster started on this machine) and its token.
type clusterFlags struct {
	address, token, tokenFile string
}

func (c *clusterFlags) add(f *pflag.FlagSet) { c.addAs(f, "address") }

// addAs is add with the address flag under another name.
func (c *clusterFlags) addAs(f *pflag.FlagSet, address string) {
	f.StringVar(&c.address, address, "", "the cluster's IP:PORT (default $GRAY_ADDRESS, or the cluster started on this machine)")
	f.StringVar(&c.tokenFile, "token-file", "", "a file holding the cluster token (default $GRAY_TOKEN, or found on the head's machine)")
	f.StringVar(&c.token, "token", "", "the cluster token itself (visible to every local user in ps: prefer --token-file or $GRAY_TOKEN)")
}

// dial connects to the cluster's Redis; the caller closes it.
func (c *clusterFlags) dial(ctx context.Context, stderr io.Writer) (*control.Redis, string, error) {
	address := c.address
	if address == "" {
		address = os.Getenv(session.EnvAddress)
	}
	if address == "" {
		address = "auto"
	}
	tok, err := session.TokenFromFlags(c.token, c.tokenFile, stderr)
	if err != nil {
		return nil, "", err
	}
	addr, tok, err := session.Resolve(address, tok)
	if err != nil {
		return nil, "", err
	}
	r, err := control.DialRedis(ctx, control.RedisConfig{Addr: addr, Password: tok}, "")
	if err != nil {
		return nil, "", err
	}
	return r, addr, nil
}

func newList() *cobra.Command {
	var (
		cl      clusterFlags
		asJSON  bool
		filters []string
		limit   int
	)
	cmd := &cobra.Command{
		Use:   "list nodes|jobs|actors|tasks [--filter key=value ...] [--limit N] [--json]",
		Short: "List a cluster's nodes, jobs, actors or tasks (every driver's), like Ray's state API",
		Long: `list prints one row per node, job, actor or task the cluster's Redis holds, of
every driver connected to it. --filter key=value (or key!=value) keeps the rows
whose JSON key has that value; give it more than once to combine them. --json
prints the rows as a JSON array with stable snake_case keys (docs/cluster.md
lists them).

Ended tasks and dead actors stay listed for the head's --keep-ended, and each
job keeps at most the head's --max-task-records tasks, its newest.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one kind to list: gray list %s (got %d)", strings.Join(state.Kinds, "|"), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := strings.ToLower(args[0])
			if state.Keys(kind+"s") != nil {
				kind += "s" // "gray list task" too
			}
			flt, err := state.ParseFilters(kind, filters)
			if err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: give a positive number of rows, or 0 for all", limit)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			r, _, err := cl.dial(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer r.Close()
			res, err := state.List(ctx, r, kind, flt, limit)
			if err != nil {
				return err
			}
			for _, n := range res.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: "+n)
			}
			if len(res.Rows) < res.Matched {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: showing %d of %d %s (--limit 0 shows all)\n", len(res.Rows), res.Matched, kind)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res.Rows)
			}
			state.WriteTable(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	cl.add(f)
	f.BoolVar(&asJSON, "json", false, "print a JSON array of rows (snake_case keys)")
	f.StringArrayVar(&filters, "filter", nil, "keep rows whose key has this value: key=value or key!=value (repeatable)")
	f.IntVar(&limit, "limit", 100, "print at most this many rows (0: all)")
	return cmd
}
