package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/plot"
	"github.com/gray-ml/gray/platform/runner"
	"github.com/gray-ml/gray/platform/sweep"
	"github.com/gray-ml/gray/plugins"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/tune"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var showConfig, resume bool
	var cl clusterFlags
	var dash dashboardFlags
	var format string
	root := &cobra.Command{
		Use:   "train",
		Short: "Train reinforcement-learning agents and inspect their runs",
		Long: `train runs one algorithm on one environment, prints a line per iteration and
writes a run folder <local-dir>/<name>/<ALG>_<ENV>_<date>_<id>/ with config.json,
result.json, progress.csv, a TensorBoard event file and checkpoint_<n>/ folders.

Every flag is also a key of an experiment file (-f), with underscores for dashes;
flags override the file. Ctrl-C stops after the current iteration and saves a
checkpoint.`,
		Example: `  train --env CartPole-v1 --alg PPO --stop '{"episode_reward_mean": 475}'
  train -f configs/cartpole-ppo.yaml --seed 3
  train --alg PPO --show-config`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exp, err := config.Resolve(cmd.Flags(), sweep.Keys...)
			if err != nil {
				return err
			}
			if showConfig {
				return printConfig(stdout, exp, format)
			}
			if err := setPluginCallTimeout(exp.PluginCallTimeoutS); err != nil {
				return err
			}
			if err := cl.check(cmd.Context(), stderr); err != nil {
				return err
			}
			opts := runner.Options{
				StartRuntime: func(ctx context.Context, logDir string, cfg rllib.Config) (func(), error) {
					cpus := exp.NumCPUs
					if cl.address == "" {
						var note string
						if cpus, note = ownRuntimeCPUs(cpus, cfg, goruntime.NumCPU()); note != "" {
							fmt.Fprintln(stderr, note)
						}
					}
					stopRuntime, err := startRuntime(ctx, cpus, logDir, cl)
					if err != nil {
						return nil, err
					}
					// Here, once the config has passed and the run folder
					// exists: a run that fails its checks prints only why.
					stopDashboard := dash.start(ctx, exp.LocalDir, stdout, cl)
					return func() {
						stopRuntime()
						stopDashboard()
					}, nil
				},
			}
			isSweep, err := sweep.IsSweep(exp)
			if err != nil {
				return err
			}
			if isSweep {
				return runSweep(cmd.Context(), exp, resume, cmd.Flags().Changed("name"), stdout, opts)
			}
			if resume {
				return fmt.Errorf("--resume continues a sweep (an experiment file with search spaces or a scheduler); to continue a single run use --restore CHECKPOINT")
			}
			sum, err := runner.Train(cmd.Context(), exp, stdout, opts)
			if err != nil {
				if sum.RunDir != "" {
					fmt.Fprintf(stderr, "train: results so far are in %s\n", sum.RunDir)
				}
				return err
			}
			if sum.Checkpoint != "" {
				fmt.Fprintf(stdout, "last checkpoint: %s\n", sum.Checkpoint)
			}
			fmt.Fprintf(stdout, "results: %s\n", sum.RunDir)
			if sum.Interrupted {
				return errInterrupted
			}
			return nil
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	config.AddFlags(root.Flags())
	root.Flags().BoolVar(&showConfig, "show-config", false, "print the algorithm's configuration (defaults, with --config and -f applied) and exit")
	root.Flags().StringVar(&format, "format", "json", "--show-config output format: json or yaml")
	dash.addFlags(root)
	root.Flags().BoolVar(&resume, "resume", false, "continue the sweep in <local-dir>/<name> from where it stopped")
	root.Flags().StringVar(&cl.address, "address", "", "run on the Gray cluster at IP:PORT (\"auto\": the one started on this machine; default $GRAY_ADDRESS): rollout workers and trials are placed across its nodes")
	root.Flags().StringVar(&cl.tokenFile, "token-file", "", "a file holding the cluster's token: the head's <temp-dir>/token, or a 0600 copy (default $GRAY_TOKEN, or found on the head's machine)")
	root.Flags().StringVar(&cl.token, "token", "", "the cluster's token itself (visible to every local user in ps: prefer --token-file or $GRAY_TOKEN)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newRolloutCmd(stdout, stderr), newPlotCmd(stdout), newLsCmd(stdout), newBestCmd(stdout))
	return root
}

// runSweep runs the sweep exp describes with Tune.
// nameFlag says --name was given, overriding the file's name.
func runSweep(ctx context.Context, exp config.Experiment, resume, nameFlag bool, stdout io.Writer, opts runner.Options) error {
	a, err := sweep.Run(ctx, exp, resume, stdout, opts)
	dir := filepath.Join(exp.LocalDir, exp.Name)
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "interrupted: to continue, run %s\n", resumeCommand(exp, nameFlag))
		return errInterrupted
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d trials in %s; list them with `train ls %s`\n", len(a.Trials), dir, dir)
	if a.Ended != "" {
		fmt.Fprintf(stdout, "sweep ended by stop_experiment: %s\n", a.Ended)
	}
	if a.BudgetSpent {
		fmt.Fprintf(stdout, "time budget spent before the sweep finished: to continue it, run %s\n", resumeCommand(exp, nameFlag))
	}
	var failed []string
	for _, t := range a.Trials {
		if t.Status == tune.Errored {
			failed = append(failed, fmt.Sprintf("trial %s (%d failures): %s", t.ID, t.Failures, t.Error))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d trials failed:\n  %s\ntheir results so far are kept (`train ls %s --status ERROR`)",
			len(failed), len(a.Trials), strings.Join(failed, "\n  "), dir)
	}
	return nil
}

// experimentDir resolves the EXPERIMENT argument of ls and best: a
// folder, or an experiment name under --local-dir ($GRAY_LOCAL_DIR,
// ~/gray_results).
func experimentDir(arg, localDir string) (string, error) {
	if localDir == "" {
		localDir = os.Getenv("GRAY_LOCAL_DIR")
	}
	if localDir == "" {
		localDir = config.DefaultLocalDir
	}
	return sweep.ExperimentDir(config.ExpandHome(arg), config.ExpandHome(localDir))
}

func newLsCmd(stdout io.Writer) *cobra.Command {
	var opts sweep.ListOptions
	var localDir string
	cmd := &cobra.Command{
		Use:   "ls EXPERIMENT",
		Short: "List the trials of a sweep with their hyperparameters and latest results",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := experimentDir(args[0], localDir)
			if err != nil {
				return err
			}
			return sweep.List(stdout, dir, opts)
		},
	}
	cmd.Flags().StringVar(&localDir, "local-dir", "", "where experiments are (default $GRAY_LOCAL_DIR or ~/gray_results)")
	cmd.Flags().StringSliceVar(&opts.Columns, "columns", nil, "result keys to show (default episode_reward_mean,timesteps_total,time_total_s)")
	cmd.Flags().StringVar(&opts.SortBy, "sort", "", "sort by this result key (-key: descending)")
	cmd.Flags().BoolVar(&opts.Desc, "desc", false, "sort descending")
	cmd.Flags().StringVar(&opts.Status, "status", "", "only trials with this status (RUNNING, TERMINATED, ERROR, ...)")
	return cmd
}

func newBestCmd(stdout io.Writer) *cobra.Command {
	var metric, mode, localDir string
	cmd := &cobra.Command{
		Use:   "best EXPERIMENT --metric M [--mode max|min]",
		Short: "Print the best trial of a sweep: its config and checkpoint",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := experimentDir(args[0], localDir)
			if err != nil {
				return err
			}
			_, err = sweep.Best(stdout, dir, metric, tune.Mode(mode))
			return err
		},
	}
	cmd.Flags().StringVar(&localDir, "local-dir", "", "where experiments are (default $GRAY_LOCAL_DIR or ~/gray_results)")
	cmd.Flags().StringVar(&metric, "metric", "episode_reward_mean", "result key to compare")
	cmd.Flags().StringVar(&mode, "mode", "max", "max or min")
	return cmd
}

func printConfig(w io.Writer, exp config.Experiment, format string) error {
	if exp.Alg == "" {
		return fmt.Errorf("--show-config needs --alg NAME (known algorithms: %s)", strings.Join(rllib.AlgorithmNames(), ", "))
	}
	alg, err := rllib.Lookup(exp.Alg)
	if err != nil {
		return err
	}
	decoded, err := alg.Decode(exp.Config)
	if err != nil {
		return err
	}
	// Printed as its JSON keys, in YAML as well.
	cfg, err := runner.ConfigMap(decoded)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	case "yaml":
		b, err := yaml.Marshal(map[string]any{"alg": alg.Name, "config": cfg})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s", b)
	default:
		return fmt.Errorf("--format must be json or yaml, got %q", format)
	}
	return nil
}

func newRolloutCmd(stdout, stderr io.Writer) *cobra.Command {
	var opts runner.RolloutOptions
	var path string
	cmd := &cobra.Command{
		Use:   "rollout --checkpoint PATH [--episodes N] [--render out.gif]",
		Short: "Evaluate a saved policy: run episodes and print their returns",
		Long: `rollout rebuilds the agent from a checkpoint (its algorithm, environment and
config are recorded beside it), restores it and runs episodes on a fresh
environment, printing each return and their mean. With --render it records
the episodes as an animated GIF (or PNG frames) of the environment's own
rendering.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return fmt.Errorf("rollout needs --checkpoint PATH (a checkpoint_<n> folder of a run)")
			}
			_, err := runner.Rollout(cmd.Context(), config.ExpandHome(path), opts, stdout, runner.Options{
				StartRuntime: func(ctx context.Context, logDir string, cfg rllib.Config) (func(), error) {
					cpus, note := ownRuntimeCPUs(0, cfg, goruntime.NumCPU())
					if note != "" {
						fmt.Fprintln(stderr, note)
					}
					return startRuntime(ctx, cpus, logDir, clusterFlags{})
				},
			})
			return err
		},
	}
	cmd.Flags().StringVar(&path, "checkpoint", "", "checkpoint to evaluate (a checkpoint_<n> folder)")
	cmd.Flags().IntVar(&opts.Episodes, "episodes", 10, "number of episodes")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 0, "seed of the first episode (episode i uses seed+i)")
	cmd.Flags().IntVar(&opts.MaxSteps, "max-steps", 0, "cap on steps per episode (0: 100,000)")
	cmd.Flags().StringVar(&opts.Render, "render", "", "record the episodes: an animated GIF (PATH ending in .gif) or PNG frames in folder PATH")
	cmd.Flags().IntVar(&opts.RenderFrames, "render-frames", 0, "cap on recorded frames (0: 3,000)")
	return cmd
}

func newPlotCmd(stdout io.Writer) *cobra.Command {
	var opts plot.Options
	var out string
	cmd := &cobra.Command{
		Use:   "plot RUN_DIR... [--metric episode_reward_mean] [-o curve.png]",
		Short: "Draw learning curves of runs (or of every run in an experiment folder)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for i := range args {
				args[i] = config.ExpandHome(args[i])
			}
			dirs, err := plot.RunDirs(args)
			if err != nil {
				return err
			}
			curves, err := plot.Curves(dirs, opts)
			if err != nil {
				return err
			}
			if err := plot.Save(curves, out, opts); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (%d runs)\n", out, len(curves))
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Metric, "metric", "episode_reward_mean", "result key on the y axis")
	cmd.Flags().StringVar(&opts.X, "x", "timesteps_total", "result key on the x axis")
	cmd.Flags().StringVar(&opts.Title, "title", "", "plot title (default: the metric)")
	cmd.Flags().StringVarP(&out, "output", "o", "curve.png", "output file: .png, .svg or .pdf")
	return cmd
}

// resumeCommand says how to continue the sweep exp: a command that works
// as it is, naming the experiment and local dir the sweep used.
func resumeCommand(exp config.Experiment, nameFlag bool) string {
	if exp.File == "" {
		return "the same command with --resume"
	}
	cmd := "train -f " + shellQuote(exp.File)
	if nameFlag {
		cmd += " --name " + shellQuote(exp.Name)
	}
	return "`" + cmd + " --local-dir " + shellQuote(exp.LocalDir) + " --resume`"
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:,@", c)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// setPluginCallTimeout makes secs (when set) the call timeout of every
// plugin this process and its worker processes, which inherit the
// environment, start.
func setPluginCallTimeout(secs float64) error {
	if secs <= 0 {
		return nil
	}
	if err := os.Setenv(plugins.CallTimeoutEnv, strconv.FormatFloat(secs, 'g', -1, 64)); err != nil {
		return fmt.Errorf("setting the plugin call timeout: %w", err)
	}
	return nil
}
