package identity

import "testing"

func TestAdmitted(t *testing.T) {
	users, groups, tokens := []string{"ann@example.com"}, []string{"eng"}, []string{"ci"}
	tests := []struct {
		name string
		u    User
		want bool
	}{
		{"the local user", User{}, true},
		{"a config token", User{Kind: Shared}, false},
		{"a listed user", User{Kind: Person, Name: "ann@example.com"}, true},
		{"a user in a listed group", User{Kind: Person, Name: "bob@example.com", Groups: []string{"ops", "eng"}}, true},
		{"a user in no listed group", User{Kind: Person, Name: "bob@example.com", Groups: []string{"ops"}}, false},
		{"a user named like a listed token", User{Kind: Person, Name: "ci"}, false},
		{"a user in a group named like a listed user", User{Kind: Person, Name: "eve", Groups: []string{"ann@example.com"}}, false},
		{"a listed token", User{Kind: Machine, Name: "ci"}, true},
		{"a token named like a listed user", User{Kind: Machine, Name: "ann@example.com"}, false},
		{"a token named like a listed group", User{Kind: Machine, Name: "eng"}, false},
		{"a user whose name differs in case", User{Kind: Person, Name: "Ann@example.com"}, false},
	}
	for _, tt := range tests {
		if got := tt.u.Admitted(users, groups, tokens); got != tt.want {
			t.Errorf("%s: Admitted = %v, want %v", tt.name, got, tt.want)
		}
	}
}
