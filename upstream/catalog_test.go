package upstream

import "testing"

func TestCatalogCollisions(t *testing.T) {
	cat := NewCatalog([]Tool{
		{Server: "a", Name: "x", Exposed: "x"},
		{Server: "b", Name: "x", Exposed: "x"},
	})
	if len(cat.Tools) != 2 || cat.Tools[0].Exposed != "x" || cat.Tools[1].Exposed == "x" {
		t.Fatalf("collision not resolved: %+v", cat.Tools)
	}
	if !apiName.MatchString(cat.Tools[1].Exposed) {
		t.Errorf("renamed tool %q is not a legal name", cat.Tools[1].Exposed)
	}
	if again := NewCatalog([]Tool{{Server: "a", Name: "x", Exposed: "x"}, {Server: "b", Name: "x", Exposed: "x"}}); again.Tools[1].Exposed != cat.Tools[1].Exposed {
		t.Error("collision renaming is not deterministic")
	}
}
