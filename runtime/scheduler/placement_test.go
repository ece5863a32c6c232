package scheduler

import (
	"strings"
	"testing"
)

func TestParsePlacement(t *testing.T) {
	out := []byte("41|flare|debug|normal|COMPLETED|vm\n42|flare|multi|high|CANCELLED by 1500|flnode[1-2]\n")
	p, ok, err := parsePlacement(out, "42")
	if err != nil || !ok || p != (Placement{JobID: "42", Account: "flare", Partition: "multi", QOS: "high", State: "CANCELLED", Nodes: "flnode[1-2]"}) {
		t.Errorf("got %+v %v %v", p, ok, err)
	}
	if _, ok, err := parsePlacement(out, "43"); ok || err != nil {
		t.Errorf("absent job: %v %v", ok, err)
	}
	if _, _, err := parsePlacement([]byte("42|a|b|c|COMPLETED|n\n42|a|b|c|COMPLETED|n\n"), "42"); err == nil || !strings.Contains(err.Error(), "2 records") {
		t.Errorf("two rows: %v", err)
	}
	if _, _, err := parsePlacement([]byte("42|a|b\n"), "42"); err == nil || !strings.Contains(err.Error(), "6 fields") {
		t.Errorf("short row: %v", err)
	}
}
