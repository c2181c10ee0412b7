// Package poison looks for tool poisoning in the text of a tool's definition: its
// description and every string of its schemas. A poisoned tool is one whose definition,
// which the model reads and the user rarely does, instructs the model: to read a secret
// file, to pass the conversation or secrets in an argument, to keep something from the
// user, to use other tools otherwise (shadowing), or to send data to an address; or that
// hides text in characters a client shows as nothing. The patterns are the table below,
// each with the reason a user is shown.
package poison

import (
	"regexp"
	"slices"
	"strings"
)

// A rule is one pattern of poisoning.
type rule struct {
	name string // short, for the status line
	why  string // for the user
	re   *regexp.Regexp
	// skip, if set, passes over a match that is not one: text is the text, and
	// text[start:end] the match.
	skip func(text string, start, end int) bool
	// anchors are words every match holds, lowercased: a match holds one word of each
	// group. Most texts hold none, and looking for words is far cheaper than running re
	// (see mayMatch); TestAnchors holds them to re.
	anchors [][]string
}

// rules is every pattern but hidden characters (see hidden), which no regular expression
// states clearly. Each must match the published techniques (poison_test.go) and nothing
// in the 41 real catalogs (TestRealCatalogs).
var rules = []rule{
	{
		name: "secret file",
		why:  "it names a file that holds credentials or keys, which a tool's description has no reason to ask the model to read",
		re:   regexp.MustCompile(`(?i)(~|\$HOME|%USERPROFILE%)[/\\]\.(ssh|aws|gnupg|kube|docker|config/gh)\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws[/\\]credentials|[/\\]etc[/\\](passwd|shadow)\b|\b(claude_desktop_config|\.cursor[/\\]mcp|\.mcp)\.json\b|~[/\\]\.(netrc|npmrc|pgpass|bash_history|zsh_history)\b`),
		// A public key is meant to be shared: Azure's VM tools ask for ~/.ssh/id_rsa.pub.
		skip:    func(text string, start, end int) bool { return strings.HasSuffix(pathAt(text, start), ".pub") },
		anchors: [][]string{{"~", "$home", "%userprofile%", "id_", ".aws", "etc", "claude_desktop_config", ".cursor", ".mcp"}},
	},
	{
		name:    "hides from the user",
		why:     "it tells the model to keep something from the user",
		re:      regexp.MustCompile(`(?i)\b(do not|don't|never|must not|should not)\s+(tell|inform|notify|alert|mention|reveal|show|disclose)\b[^.\n]{0,40}\b(user|human|them)\b|\bwithout\s+(telling|informing|notifying|alerting|asking)\s+the\s+(user|human)\b|\b(the\s+)?user\s+(must|should)\s+not\s+(know|see|be\s+told|notice)\b`),
		anchors: [][]string{{"not", "n't", "never", "without"}, {"user", "human", "them"}},
	},
	{
		name:    "instructions to the model",
		why:     "it addresses the model with markup or phrases that override its instructions",
		re:      regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|hidden)\s*>|\bignore\s+(all\s+|any\s+)?(previous|prior|above|earlier|other)\s+(instructions|prompts?|rules)\b|\byou\s+are\s+now\b|\bnew\s+instructions\s*:`),
		anchors: [][]string{{"<", "ignore", "now", "instructions"}},
	},
	{
		name:    "conversation in an argument",
		why:     "it asks the model to put the conversation, its instructions or secrets into an argument",
		re:      regexp.MustCompile(`(?i)\b(pass|include|put|send|provide|add|copy|append|attach)\b[^.\n]{0,50}\b(conversation\s+(history|so\s+far|log|transcript)|(entire|full|whole|complete)\s+(conversation|chat|context)|chat\s+history|(previous|last|earlier|recent)\s+messages|message\s+history|system\s+prompt|your\s+instructions|private\s+keys?|ssh\s+keys?)\b|\b(conversation\s+history|chat\s+history|(previous|last|earlier|recent)\s+messages|message\s+history|system\s+prompt)\b[^.\n]{0,40}\b(passed|included|sent|put|added)\s+(as|in|into)\b`),
		anchors: [][]string{{"conversation", "chat", "context", "message", "prompt", "instructions", "private", "ssh"}},
	},
	{
		name:    "shadows other tools",
		why:     "it tells the model how to use other tools than its own",
		re:      regexp.MustCompile(`(?i)\b(when|before|after|whenever|instead\s+of)\s+(using|calling|invoking|running)\s+(any|another|other|all)\s+(other\s+)?(tools?|servers?|mcp)\b|\b(all|any|every)\s+other\s+tools?\s+(must|should|need)\b|\bside\s+effects?\s+on\s+(the\s+)?(also\s+present\s+|other\s+)?[\w-]+\s+tool\b|\b(the\s+)?[\w-]+\s+tool\s+(must|should|has\s+to)\s+(send|change|redirect|forward|use)\b`),
		anchors: [][]string{{"using", "calling", "invoking", "running", "other", "effect", "must", "should", "has"}},
	},
	{
		name:    "uses the client's tools",
		why:     "it tells the model to use the client's own tools (its shell, its web fetch), which no server's tool needs",
		re:      regexp.MustCompile(`(?i)\b(use|call|invoke|run|with|through|via)\s+(your|the)\s+(bash|shell|terminal|webfetch|web\s+fetch|websearch|computer)\s+tool\b|\b(run_terminal_cmd|run_shell_command|web_fetch)\b`),
		anchors: [][]string{{"bash", "shell", "terminal", "fetch", "websearch", "computer", "run_terminal_cmd", "run_shell_command"}},
	},
	{
		name:    "sends data away",
		why:     "it asks the model to send data to an address",
		re:      regexp.MustCompile(`(?i)\b(send|post|upload|forward|exfiltrate|report|copy|transmit)(s|ed|ing)?\b[^.\n]{0,40}\b(data|results?|output|contents?|keys?|tokens?|credentials|secrets?|it|them|everything)\b[^.\n]{0,20}\bto\s+(https?://|[a-z0-9.-]+\.(com|net|org|io|xyz|ru)\b|\d{1,3}(\.\d{1,3}){3}|[\w.+-]+@[\w-]+\.)`),
		anchors: [][]string{{"send", "post", "upload", "forward", "exfiltrate", "report", "copy", "transmit"}, {"to"}},
	},
}

// pathAt is the path-like word that starts at start: up to a space, a quote or a bracket.
func pathAt(text string, start int) string {
	end := start
	for end < len(text) && !strings.ContainsRune(" \t\n\"'`()[]{}<>,;", rune(text[end])) {
		end++
	}
	return strings.TrimRight(text[start:end], ".:")
}

// mayMatch reports whether lower (an ASCII text, lowercased) holds a word of each of r's
// anchor groups, as every match of r.re does.
func (r *rule) mayMatch(lower string) bool {
	for _, group := range r.anchors {
		if !slices.ContainsFunc(group, func(w string) bool { return strings.Contains(lower, w) }) {
			return false
		}
	}
	return true
}
