package ids

import "testing"

func TestDeterministicAndUnique(t *testing.T) {
	a, b := Root(7, true), Root(7, true)
	if a != b {
		t.Fatal("seeded roots differ")
	}
	u1, u2 := Root(0, false), Root(0, false) // two unseeded roots: random, so distinct
	if Root(7, true) == Root(8, true) || u1 == u2 {
		t.Fatal("different seeds (or unseeded roots) gave the same root")
	}
	seen := map[TaskID]bool{}
	for n := range uint64(10000) {
		c := Child(a, n)
		if seen[c] {
			t.Fatalf("child %d repeats an ID", n)
		}
		seen[c] = true
		if g := Child(Child(a, n), 1); seen[g] {
			t.Fatalf("grandchild of %d repeats an ID", n)
		}
	}
	r := Return(a, 2)
	if r.Task() != a || r.Index() != 2 || Put(a, 1) == Return(a, 1) {
		t.Fatal("object IDs do not encode their task and index")
	}
	if len(r.String()) != 40 || len(a.String()) != 32 {
		t.Fatalf("hex lengths %d, %d", len(r.String()), len(a.String()))
	}
}
