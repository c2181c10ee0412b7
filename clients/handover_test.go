package clients

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHandover(t *testing.T) {
	tests := []struct {
		name     string
		existing string // the settings file before; "" for none
		names    []string
		want     string       // disabledMcpjsonServers after, as JSON
		edit     func(string) // a change the user makes between setup and undo
	}{
		{"no file yet", "", []string{"memory", "fs"}, `["memory","fs"]`, nil},
		{"other settings kept", `{"permissions": {"allow": ["Bash(ls)"]}, "enabledMcpjsonServers": ["memory"]}`, []string{"memory"}, `["memory"]`, nil},
		{"already disabled by the user", `{"disabledMcpjsonServers": ["fs"]}`, []string{"fs", "memory"}, `["fs","memory"]`, nil},
		{"comments in the file", "// mine\n{\"disabledMcpjsonServers\": [] /* none */}\n", []string{"memory"}, `["memory"]`, nil},
		{"changed since setup", `{"permissions": {}}`, []string{"memory"}, `["memory"]`, func(f string) {
			data, _ := os.ReadFile(f)
			os.WriteFile(f, []byte(strings.Replace(string(data), `"permissions": {}`, `"permissions": {"deny": ["x"]}`, 1)), 0o644)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project, state := t.TempDir(), t.TempDir()
			file := SettingsFile(project)
			if tt.existing != "" {
				os.MkdirAll(filepath.Dir(file), 0o755)
				os.WriteFile(file, []byte(tt.existing), 0o640)
			}
			h, err := PlanHandover(project, tt.names, state)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(stateDir(state, file)); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("planning wrote to the state folder")
			}
			if err := h.Apply(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(file)
			doc, err := parseJSONC(file, data)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := doc.root.get("disabledMcpjsonServers").value().([]any)
			if s := strings.Join(stringList(got), ","); `["`+strings.ReplaceAll(s, ",", `","`)+`"]` != tt.want {
				t.Errorf("disabledMcpjsonServers = %v, want %s", got, tt.want)
			}
			if strings.Contains(tt.existing, "permissions") && !strings.Contains(string(data), "Bash(ls)") && !strings.Contains(string(data), "permissions") {
				t.Errorf("other settings lost:\n%s", data)
			}
			// Setup again with one more server: the original stays the first one's.
			again, err := PlanHandover(project, append(tt.names, "later"), state)
			if err != nil || len(again.Names) != 1 || again.Names[0] != "later" {
				t.Fatalf("second handover: %+v, %v", again, err)
			}
			if err := again.Apply(); err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(file)
			}
			back, err := PlanTakeBack(project, state)
			if err != nil || back == nil {
				t.Fatalf("take back: %v, %v", back, err)
			}
			if err := back.Apply(); err != nil {
				t.Fatal(err)
			}
			now, err := os.ReadFile(file)
			switch {
			case tt.existing == "":
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("undo left the file setup made:\n%s", now)
				}
			case tt.edit == nil:
				if string(now) != tt.existing {
					t.Errorf("undo = %s, want the original byte for byte:\n%s", now, tt.existing)
				}
			default:
				if !strings.Contains(string(now), `"deny"`) || strings.Contains(string(now), "memory") || strings.Contains(string(now), "later") {
					t.Errorf("undo after an edit = %s; want the edit kept and setup's names gone", now)
				}
			}
			if _, err := os.Stat(stateDir(state, file)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("undo left setup's state: %v", err)
			}
			if b, err := PlanTakeBack(project, state); b != nil || err != nil {
				t.Errorf("a second undo: %v, %v", b, err)
			}
		})
	}
}

func TestHandoverRefusesABrokenFile(t *testing.T) {
	project := t.TempDir()
	os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	os.WriteFile(SettingsFile(project), []byte(`{"disabledMcpjsonServers": [`), 0o644)
	if _, err := PlanHandover(project, []string{"a"}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "fix it, then run setup again") {
		t.Errorf("broken settings file: %v", err)
	}
	if _, err := PlanHandover(project, []string{"a"}, ""); err == nil {
		t.Error("no state folder: want an error")
	}
}

// TestHandoverEditsInPlace: setup adds its names to the user's list, and the undo after
// the user edited the file takes out only those, leaving every other byte.
func TestHandoverEditsInPlace(t *testing.T) {
	project, state := t.TempDir(), t.TempDir()
	file := SettingsFile(project)
	os.MkdirAll(filepath.Dir(file), 0o755)
	orig := "{\n  /* mine */ \"disabledMcpjsonServers\": [\"a\", // keep\n    \"b\"],\n  \"n\": 1e400\n}\n"
	os.WriteFile(file, []byte(orig), 0o644)
	h, err := PlanHandover(project, []string{"x", "a", "y"}, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(orig, `"b"]`, `"b", "x", "y"]`, 1)
	if got, _ := os.ReadFile(file); string(got) != want {
		t.Fatalf("handover wrote\n%s\nwant\n%s", got, want)
	}
	// The user edits another key: the undo takes out x and y only.
	os.WriteFile(file, []byte(strings.Replace(want, "1e400", "2", 1)), 0o644)
	back, err := PlanTakeBack(project, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Apply(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != strings.Replace(orig, "1e400", "2", 1) {
		t.Errorf("undo left\n%s", got)
	}
}

// TestHandoverUndoKeepsUserNames: names the user added after setup's stay at undo.
func TestHandoverUndoKeepsUserNames(t *testing.T) {
	project, state := t.TempDir(), t.TempDir()
	file := SettingsFile(project)
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(`{"disabledMcpjsonServers": [], "k": 1}`), 0o644)
	h, err := PlanHandover(project, []string{"x"}, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != `{"disabledMcpjsonServers": ["x"], "k": 1}` {
		t.Fatalf("handover wrote %s", got)
	}
	os.WriteFile(file, []byte(`{"disabledMcpjsonServers": ["x", "u"], "k": 2}`), 0o644)
	back, err := PlanTakeBack(project, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Apply(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != `{"disabledMcpjsonServers": ["u"], "k": 2}` {
		t.Errorf("undo left %s", got)
	}
}
