package dashboard

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gray-ml/gray/platform/tensorboard"
)

// Event files as other tools write them, encoded here field by field
// (tensorflow.Event 1 wall_time, 2 step, 5 summary; Summary.Value 1 tag,
// 2 simple_value, 8 tensor; TensorProto 1 dtype, 4 tensor_content).

func tfRecord(data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, tensorboard.MaskedCRC(b[:8]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, tensorboard.MaskedCRC(data))
}

// tfScalars is one event at step: each tag's value as simple_value (TF1,
// PyTorch) or, with tensors, as a DT_DOUBLE scalar tensor (TF2).
func tfScalars(step int64, wall float64, tensors bool, tags []string, vals []float64) []byte {
	var sum []byte
	for i, tag := range tags {
		v := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), tag)
		if tensors {
			tp := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 2)
			tp = protowire.AppendTag(tp, 4, protowire.BytesType)
			tp = protowire.AppendBytes(tp, binary.LittleEndian.AppendUint64(nil, math.Float64bits(vals[i])))
			v = protowire.AppendBytes(protowire.AppendTag(v, 8, protowire.BytesType), tp)
		} else {
			v = protowire.AppendFixed32(protowire.AppendTag(v, 2, protowire.Fixed32Type), math.Float32bits(float32(vals[i])))
		}
		sum = protowire.AppendBytes(protowire.AppendTag(sum, 1, protowire.BytesType), v)
	}
	ev := protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), math.Float64bits(wall))
	ev = protowire.AppendVarint(protowire.AppendTag(ev, 2, protowire.VarintType), uint64(step))
	return tfRecord(protowire.AppendBytes(protowire.AppendTag(ev, 5, protowire.BytesType), sum))
}

// writeTF2 writes steps [from, to) of a TF2-style file: one event per
// scalar, loss = step/2 and lr = 0.5.
func tf2Steps(from, to int) []byte {
	var b []byte
	for i := from; i < to; i++ {
		b = append(b, tfScalars(int64(i*10), 1700000000+float64(i)/4, true, []string{"loss"}, []float64{float64(i) / 2})...)
		b = append(b, tfScalars(int64(i*10), 1700000000+float64(i)/4, true, []string{"lr"}, []float64{0.5})...)
	}
	return b
}

func appendBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// tfLogdir is a log dir of other tools' runs: tb/tf1 (TF1/PyTorch
// simple_value, two tags per event, 30 steps) and tf2/train (TF2
// tensors, 40 steps), and a Gray run that writes both result.json and an
// event file.
func tfLogdir(t testing.TB) (logdir, tf2 string) {
	logdir = t.TempDir()
	tf1 := filepath.Join(logdir, "tb", "tf1")
	tf2dir := filepath.Join(logdir, "tf2", "train")
	for _, d := range []string{tf1, tf2dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var b []byte
	for i := 0; i < 30; i++ {
		b = append(b, tfScalars(int64(i), 1700000000+float64(i), false, []string{"acc", "loss"}, []float64{float64(i) / 30, 1 / float64(i+1)})...)
	}
	appendBytes(t, filepath.Join(tf1, "events.out.tfevents.1700000000.host"), b)
	tf2 = filepath.Join(tf2dir, "events.out.tfevents.1700000001.host.123.v2")
	appendBytes(t, tf2, tf2Steps(0, 40))
	gray := writeRun(t, logdir, "exp/gray", resultLine(1, 10), resultLine(2, 20))
	appendBytes(t, filepath.Join(gray, "events.out.tfevents.1700000002.host"), tfScalars(1, 0, false, []string{"episode_reward_mean"}, []float64{10}))
	return logdir, tf2
}

func TestEventFilesOfOtherToolsAreRuns(t *testing.T) {
	logdir, tf2 := tfLogdir(t)
	srv := testServer(t, Options{LogDir: logdir})
	h := srv.Handler()
	type runsT struct {
		Runs []runRow `json:"runs"`
	}
	rows := map[string]runRow{}
	for _, r := range decode[runsT](t, get(t, h, "/api/runs")).Runs {
		rows[r.ID] = r
	}
	if len(rows) != 3 || rows["tb/tf1"].ID == "" || rows["tf2/train"].ID == "" || rows["exp/gray"].ID == "" {
		t.Fatalf("runs %v; want tb/tf1, tf2/train and exp/gray once each", rows)
	}
	type seriesT struct {
		Runs []struct {
			N      int               `json:"n"`
			Series map[string]points `json:"series"`
		} `json:"runs"`
	}
	s := decode[seriesT](t, get(t, h, "/api/series?run=tf2/train"))
	loss := s.Runs[0].Series["loss"]
	if s.Runs[0].N != 40 || len(loss.X) != 40 || loss.X[39] != 390 || loss.Y[39] != 19.5 || len(s.Runs[0].Series["lr"].Y) != 40 {
		t.Fatalf("tf2 series: n=%d loss=%+v", s.Runs[0].N, loss)
	}
	wall := decode[seriesT](t, get(t, h, "/api/series?run=tf2/train&x=wall&keys=^loss$")).Runs[0].Series["loss"]
	if wall.X[1] != 0.25 {
		t.Errorf("wall axis %v, want quarter seconds", wall.X[:3])
	}
	s = decode[seriesT](t, get(t, h, "/api/series?run=tb/tf1&keys=acc"))
	if acc := s.Runs[0].Series["acc"]; len(acc.X) != 30 || acc.X[29] != 29 {
		t.Fatalf("tf1 acc %+v", acc)
	}
	// A Gray run is read from its result.json, not its event file.
	s = decode[seriesT](t, get(t, h, "/api/series?run=exp/gray"))
	if _, ok := s.Runs[0].Series["info/learner/kl"]; !ok || s.Runs[0].N != 2 {
		t.Errorf("Gray run read from its event file? %+v", s.Runs[0])
	}

	// Appended records are read from where the last look stopped; a
	// record cut short waits for its end; a damaged one is counted.
	more := tf2Steps(40, 50)
	bad := tfScalars(999, 0, true, []string{"loss"}, []float64{1})
	bad[len(bad)-1] ^= 0xff
	appendBytes(t, tf2, append(append(more, bad...), tf2Steps(50, 51)[:20]...))
	run := srv.idx.runs["tf2/train"]
	s = decode[seriesT](t, get(t, h, "/api/series?run=tf2/train"))
	if s.Runs[0].N != 50 {
		t.Fatalf("%d rows after 10 more steps and a half record, want 50", s.Runs[0].N)
	}
	st, _ := os.Stat(tf2)
	if off := run.series.tf.tails[filepath.Base(tf2)].Off; off != st.Size()-20 {
		t.Errorf("series offset %d, want the start of the half record %d", off, st.Size()-20)
	}
	appendBytes(t, tf2, tf2Steps(50, 51)[20:])
	s = decode[seriesT](t, get(t, h, "/api/series?run=tf2/train&keys=^loss$"))
	if l := s.Runs[0].Series["loss"]; s.Runs[0].N != 51 || l.X[50] != 500 {
		t.Fatalf("after the half record was finished: n=%d", s.Runs[0].N)
	}
	for _, r := range decode[runsT](t, get(t, h, "/api/runs")).Runs {
		if r.ID == "tf2/train" && r.Bad != 1 {
			t.Errorf("runs list says bad=%d for one damaged record", r.Bad)
		}
	}
	csv := get(t, h, "/api/csv?run=tb/tf1").Body.String()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != 31 || lines[0] != "step,timestamp,acc,loss" || lines[2] != "1,1700000001,0.033333335,0.5" {
		t.Errorf("csv:\n%s", strings.Join(lines[:3], "\n"))
	}
	// Event files gone: the run goes too.
	if err := os.Remove(tf2); err != nil {
		t.Fatal(err)
	}
	if rec := get(t, h, "/api/series?run=tf2/train"); rec.Code != http.StatusNotFound {
		t.Errorf("series of a run whose event file was deleted: %d", rec.Code)
	}
}

func TestBrowserEventFilesOfOtherToolsAreCharted(t *testing.T) {
	browserCtx(t)
	logdir, _ := tfLogdir(t)
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/", "runs")
	waitJS(t, ctx, `[...document.querySelectorAll("#runtable tbody tr")].some(r => r.cells[1].textContent === "tf2" && r.cells[2].textContent === "train")`)
	open(t, ctx, srv.URL()+"#/chart?run=tf2/train", "chart")
	chart := `document.querySelector('.chart[data-key="loss"]')`
	waitJS(t, ctx, chart+` !== null && `+chart+`.querySelector("path.series") !== null`)
	// 40 steps, each a point of the line (x over steps 0..390).
	if n := eval[int](t, ctx, chart+`.querySelector("path.series").getAttribute("d").split("L").length`); n != 40 {
		t.Errorf("loss drawn from %d points, want 40", n)
	}
	screenshot(t, ctx, "tfevents-chart")
}

// A writer that logs a new tag on every step (keyed by step, say) keeps
// the run's keys bounded, as a result.json run's are.
func TestEventFilesWithANewTagEachStepStayBounded(t *testing.T) {
	logdir := t.TempDir()
	dir := filepath.Join(logdir, "wide")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for i := 0; i < 3*maxKeysPerRun; i++ {
		b = append(b, tfScalars(int64(i), 0, i%2 == 0, []string{fmt.Sprintf("per_step/%d", i)}, []float64{1})...)
	}
	appendBytes(t, filepath.Join(dir, "events.out.tfevents.1.host"), b)
	h := testServer(t, Options{LogDir: logdir}).Handler()
	info := decode[struct {
		Keys        []string `json:"keys"`
		KeysDropped int      `json:"keys_dropped"`
	}](t, get(t, h, "/api/run?id=wide"))
	// step and timestamp are two of the kept keys.
	if len(info.Keys) != maxKeysPerRun || info.KeysDropped != 2*maxKeysPerRun+2 {
		t.Errorf("%d keys kept, %d dropped; want %d kept and the rest counted", len(info.Keys), info.KeysDropped, maxKeysPerRun)
	}
}
