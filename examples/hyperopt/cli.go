package hyperopt

import (
	"context"
	"flag"
	"fmt"
	"log"
	"runtime"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
)

// DataFlags are the data options every search shares: where Fashion-MNIST
// is and how much of it to use (see LoadData).
type DataFlags struct {
	Dir                 string
	TrainN, ValN, TestN int
	// GPUs is -gpus: how many GPUs each trial trains on.
	GPUs int
	// Threads is -threads: the goroutines each trial's minibatch steps
	// are split over (TrainThreads); 0 runs one.
	Threads int
}

// Register adds the -data, -train, -val and -test flags to fs.
func (d *DataFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.Dir, "data", "", "Fashion-MNIST directory (default /usr/share/datasets/fashion-mnist)")
	fs.IntVar(&d.TrainN, "train", 10000, "training images (0: all but the validation ones)")
	fs.IntVar(&d.ValN, "val", 2000, "validation images held out of the training set")
	fs.IntVar(&d.TestN, "test", 0, "test images (0: all 10,000)")
	fs.IntVar(&d.GPUs, "gpus", 0, "GPUs per trial (0: CPUs; the CNN's pooling has no GPU kernel yet)")
	fs.IntVar(&d.Threads, "threads", runtime.GOMAXPROCS(0), "goroutines each trial's minibatch steps are split over, in fixed parts (default: the CPUs this process is given)")
}

// Load reads the data the flags describe. With -gpus above 0 it fails,
// naming the layer the GPU backend (models/cuda) lacks.
func (d DataFlags) Load() (Data, error) {
	if d.Threads < 0 {
		return Data{}, fmt.Errorf("-threads %d: give 1 or more (0, as in a DataFlags left unset, runs one)", d.Threads)
	}
	if d.GPUs < 0 {
		return Data{}, fmt.Errorf("-gpus %d: must be 0 or more", d.GPUs)
	}
	if d.GPUs > 0 {
		return Data{}, &models.NoDeviceKernelError{Layer: "the CNN's max pooling and dropout", Fix: "run with -gpus 0 to train on the CPU"}
	}
	return LoadData(d.Dir, d.TrainN, d.ValN, d.TestN)
}

// Open is the start of every search: the search space called space
// (LookupSpace) and the data the flags describe (Load).
func (d DataFlags) Open(space string) (Space, Data, error) {
	sp, err := LookupSpace(space)
	if err != nil {
		return Space{}, Data{}, err
	}
	data, err := d.Load()
	return sp, data, err
}

// Main runs a search in a gray session and ends the program's output with
// the line every example prints: the test accuracy of the best model.
// Flags must be parsed, and gray.ServeIfWorker called, before it.
func Main(search func(ctx context.Context) (testAccuracy float64, err error)) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NoGPUs: true}); err != nil {
		log.Fatal(err)
	}
	acc, err := search(ctx)
	gray.Shutdown()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy: %.4f\n", acc)
}
