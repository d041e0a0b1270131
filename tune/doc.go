// Package tune runs hyperparameter sweeps: search spaces, search
// algorithms, trial schedulers and a trial runner.
//
// # Search spaces
//
// A search space is a config whose values, anywhere inside maps and lists,
// may be Domains: GridSearch (every value, cartesian product across grids,
// repeated NumSamples times), Choice, Uniform, QUniform, LogUniform, RandInt
// (high excluded), Normal, QNormal, and SampleFrom (computed from the other
// values of the same trial). In experiment files they are one-key maps:
//
//	lr:         {loguniform: [1.0e-5, 1.0e-2]}
//	batch:      {grid_search: [1000, 2000]}
//	activation: {choice: [tanh, relu]}
//	layers:     {randint: [1, 4]}
//	noise:      {normal: [0, 0.1]}
//	clip:       {quniform: [0.1, 0.3, 0.05]}
//	minibatch:  {sample_from: "int(config.batch / 8)"}
//
// sample_from expressions use numbers, references config.<dotted key>,
// + - * / and parentheses, and int, round, min, max, pow, log, exp, sqrt.
//
// # Searchers and schedulers
//
// A Searcher suggests configs: BasicVariantGenerator (grid x random, the
// default) or TPE, optionally behind a ConcurrencyLimiter. A Scheduler
// decides, after each result, whether a trial continues, pauses or stops:
// FIFO, MedianStopping, HyperBand, ASHA, PBT.
//
// # Trials
//
// Run starts trials while the node's resources (Experiment.NodeResources)
// fit another trial's (Experiment.Resources, or Experiment.TrialResources
// computed from the trial's config). Experiment files of agents that do not
// set resources_per_trial size each trial with AgentResources: 1 CPU for
// the trial plus num_workers CPUs for the worker actors it starts (and
// num_gpus GPUs), so trials with workers do not oversubscribe the node.
// A Trainable is stepped one result at a time; FuncTrainable adapts a Go
// function that reports results, AgentTrainable any registered rllib
// algorithm, and RemoteTrainable / RemoteAgentTrainable run either in a
// gray actor (one worker process per trial).
//
// # Trials on a cluster
//
// Experiment.Placement says where trainables run. By default (PlaceAuto)
// they run in this process, except when gray runs on a cluster
// (gray.OnCluster) and the trainable is one worker processes can make:
// Registered(name, args), for a name given to RegisterTrainable at package
// level. Each trial then runs in a "tune.Trial" actor placed by gray on any
// node with room, reserving the trial's Resources less ExtraCPU (the CPUs
// of the worker actors the trainable starts itself, which reserve their
// own) through ActorType.RemoteWith, so Tune's accounting and gray's
// placement agree. With NodeResources unset, the runner follows what the
// cluster's live nodes offer. PlaceActors asks for actors on one machine
// too; PlaceInProcess never uses them.
//
// A trial's folder on the driver is the one copy that counts. The actor
// writes checkpoints in a temporary folder of its node; Save packs one (a
// tar archive, carried by gray: large replies travel between the nodes'
// object stores) and the driver unpacks it into the trial's checkpoint
// folder, and Restore sends it back to wherever the trial runs now.
// Results come back with each Step and are logged on the driver; files
// the trainable writes into its run folder are copied to the trial's
// folder at each checkpoint and when it stops. Results of trials in
// actors on a cluster carry node_id, the node the iteration ran on.
//
// The actor type has gray.NoRestarts: when its process or node dies, its
// calls fail at once with gray.ErrActorDead, and the runner restarts the
// trial from its last checkpoint (MaxFailures, the death counting as one
// failure), logging a "restored" journal event; the iterations after the
// checkpoint run again and are logged once. Trials' actors are killed
// when their trials end, and the actors a trial's trainable started (an
// agent's rollout workers, wherever they run) end with its actor.
//
// Experiment.StopExperiment (stop_experiment in files) ends the whole
// experiment once any trial reaches a goal, such as a solving reward.
//
// Experiment.TimeBudget (time_budget_s in files) bounds one run in wall
// time: trials running when it is spent end after their current step,
// and Resume continues the rest.
//
// # Experiment folder
//
//	<dir>/experiment.json    written once: search space, metric, searcher, scheduler
//	<dir>/journal.jsonl      one JSON event per line, appended, never rewritten:
//	                         created (config), result, checkpoint,
//	                         checkpoint_deleted, status, config (PBT), flush,
//	                         ended (StopExperiment met), restored (a start
//	                         from a checkpoint)
//	<dir>/trial_<id>/        the trial's run folder (LoggerFactory: params.json,
//	                         result.json, ...) and checkpoint_<iteration>/ folders
//
// Each journal event is one write(2) on an O_APPEND file, so SIGKILL loses
// no result the runner had received. Resume rebuilds every trial from the
// journal and restores the searcher's and scheduler's state by replaying
// the journal's events into freshly made, same-seeded instances (so no
// state snapshot is ever rewritten), then continues unfinished trials from
// their last checkpoint. ListTrials and BestTrial read the same files.
package tune
