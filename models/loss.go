package models

import "fmt"

// SoftmaxCrossEntropy returns the mean over the rows of logits [batch×k]
// of -log softmax(logits)[label]: the classification loss. labels is
// [batch×1] and holds class indices in [0, k) (as float64, the way
// Fashion-MNIST batches and environments carry them).
func (t *Tape) SoftmaxCrossEntropy(logits, labels *Tensor) *Tensor {
	if labels.Rows != logits.Rows || labels.Cols != 1 {
		panic(fmt.Sprintf("models: SoftmaxCrossEntropy of %s with labels %s; labels must be [%dx1]", logits.shape(), labels.shape(), logits.Rows))
	}
	return t.Neg(t.Mean(t.Gather(t.LogSoftmax(logits), labels)))
}

// Argmax writes the index of each row's largest value of x [rows×cols]
// (rows of scores or logits) into dst, grown when too small, and returns
// it: the predicted classes.
func Argmax(x *Tensor, dst []int) []int {
	if cap(dst) < x.Rows {
		dst = make([]int, x.Rows)
	}
	dst = dst[:x.Rows]
	for i := range dst {
		row, best := x.Row(i), 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		dst[i] = best
	}
	return dst
}

// Correct counts the rows of logits [batch×k] whose largest value is at
// the row's label (labels holds batch class indices).
func Correct(logits *Tensor, labels []float64) int {
	if len(labels) != logits.Rows {
		panic(fmt.Sprintf("models: Correct of %s with %d labels", logits.shape(), len(labels)))
	}
	n := 0
	for i := 0; i < logits.Rows; i++ {
		row, best := logits.Row(i), 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if float64(best) == labels[i] {
			n++
		}
	}
	return n
}

// Accuracy is the fraction of rows of logits whose largest value is at the
// row's label: Correct / batch.
func Accuracy(logits *Tensor, labels []float64) float64 {
	if logits.Rows == 0 {
		return 0
	}
	return float64(Correct(logits, labels)) / float64(logits.Rows)
}
