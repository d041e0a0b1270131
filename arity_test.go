package gray_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gray-ml/gray"
)

var (
	sum4 = gray.Func4("test.sum4", func(ctx context.Context, a int, b float64, c string, d []int) (string, error) {
		t := a + int(b) + len(c)
		for _, x := range d {
			t += x
		}
		return fmt.Sprint(t), nil
	})
	split2x2 = gray.Func2x2("test.split2x2", func(ctx context.Context, a, b int) (int, int, error) { return a / b, a % b, nil })
	four4x4  = gray.Func4x4("test.four4x4", func(ctx context.Context, a, b, c, d int) (int, int, int, int, error) {
		return d, c, b, a, nil
	})
	swap1x2 = gray.Func1x2("test.swap1x2", func(ctx context.Context, p [2]string) (string, string, error) { return p[1], p[0], nil })

	accType = gray.Actor2("test.Acc", func(ctx context.Context, start int, name string) (*Acc, error) {
		return &Acc{total: start, name: name}, nil
	})
	accAdd3 = gray.Method3(accType, "add3", func(a *Acc, ctx context.Context, x, y, z int) (int, error) {
		a.total += x + y + z
		return a.total, nil
	})
	accDescribe = gray.Method4(accType, "describe", func(a *Acc, ctx context.Context, p, q string, r int, s bool) (string, error) {
		return fmt.Sprintf("%s:%d:%s%s%d%v", a.name, a.total, p, q, r, s), nil
	})
)

// Acc accumulates sums.
type Acc struct {
	total int
	name  string
}

func testArities(t *testing.T, ctx context.Context) {
	t.Helper()
	two, _ := gray.Put(ctx, 2.0)
	list, _ := gray.Put(ctx, []int{10, 20})
	if v, err := gray.Get(ctx, sum4.Remote(1, two, "abc", list)); err != nil || v != "36" {
		t.Fatalf("sum4 = %q, %v", v, err)
	}
	q, r := split2x2.Remote(17, 5)
	if got, err := gray.GetAll(ctx, []gray.Ref[int]{q, r}); err != nil || fmt.Sprint(got) != "[3 2]" {
		t.Fatalf("split2x2 = %v, %v", got, err)
	}
	four, _ := split2x2.Remote(8, 2)
	a, b, c, d := four4x4.Remote(1, 2, 3, four)
	if got, err := gray.GetAll(ctx, []gray.Ref[int]{a, b, c, d}); err != nil || fmt.Sprint(got) != "[4 3 2 1]" {
		t.Fatalf("four4x4 = %v, %v", got, err)
	}
	x, y := swap1x2.Remote([2]string{"l", "r"})
	if got, err := gray.GetAll(ctx, []gray.Ref[string]{x, y}); err != nil || fmt.Sprint(got) != "[r l]" {
		t.Fatalf("swap1x2 = %v, %v", got, err)
	}
	start, _ := gray.Put(ctx, 100)
	h, err := accType.Remote(ctx, start, "acc")
	if err != nil {
		t.Fatal(err)
	}
	accAdd3.Remote(h, 1, 2, 3)
	if v, err := gray.Get(ctx, accDescribe.Remote(h, "p", "q", 7, true)); err != nil || v != "acc:106:pq7true" {
		t.Fatalf("describe = %q, %v", v, err)
	}
}

func TestArities(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			ctx := start(t, gray.Options{LocalMode: local})
			testArities(t, ctx)
		})
	}
}
