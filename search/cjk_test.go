package search

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// showGlosses renders a query's glosses as "镜像:imag 仓库:repositori,repo".
func showGlosses(gs []gloss) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, g.text+":"+strings.Join(g.terms, ","))
	}
	return strings.Join(parts, " ")
}

func TestGlosses(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"create issue", ""},
		{"把镜像推到仓库", "镜像:imag 推:push 仓库:repositori,repo"},
		{"把鏡像推到倉庫", "鏡像:imag 推:push 倉庫:repositori,repo"}, // Traditional
		{"帮我开个 PR 吧", "开:open,creat"},                    // mixed scripts
		{"帮我开个PR吧", "开:open,creat"},
		{"提个 issue 议题", "提:creat,open"},                        // 议题 is "issue", which the query has
		{"的了吗呢吧 一下 帮我", ""},                                    // only function words
		{"🚀部署🔥", "部署:deploi,deploy"},                           // deploy, deployment                                  // emoji
		{"カレンダーを作って", "作:engag,write,compos"},                  // kana are skipped, a kanji read as Chinese
		{"값을 설정", ""},                                          // Hangul
		{"给值班工程师打个电话", "值班:call,duti 工程师:engin 电话:phone,call"}, // "on-call" is two words
		{"记住小王喜欢上午开会", "记住:rememb 喜欢:fond 上午:morn 开会:meet"},    // a colleague, and "like" is a stop word
		{"周四下午三点约个会议", "周四:thursdai 下午:afternoon 点:click 约:schedul,appoint 会议:meet,event"},
	}
	for _, tt := range tests {
		q, err := ParseQuery(tt.in)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", tt.in, err)
			continue
		}
		if got := showGlosses(q.glosses); got != tt.want {
			t.Errorf("ParseQuery(%q).glosses = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A lone character from the general dictionary counts less than one from the glossary.
	q, _ := ParseQuery("截个图")
	if len(q.glosses) != 2 || q.glosses[0].weight != weightGloss || q.glosses[1].weight != weightGloss*weightCJKUnigram {
		t.Errorf("ParseQuery(截个图).glosses = %+v, want 截 at %v and 图 at %v", q.glosses, weightGloss, weightGloss*weightCJKUnigram)
	}
	long := strings.Repeat("把发票再发我一次", 5000)
	if q, err := ParseQuery(long); err != nil || len(q.glosses) == 0 || len(q.glosses) > 512 {
		t.Errorf("ParseQuery(40,000 characters) = %d glosses, %v", len(q.glosses), err)
	}
}

// TestNoGlossesInEnglish checks that English queries are parsed as before: no glosses, so
// they rank exactly as they did.
func TestNoGlossesInEnglish(t *testing.T) {
	for _, f := range []string{"../bench/en.yaml", "../bench/en-holdout.yaml"} {
		cases, err := LoadCases(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if q, _ := ParseQuery(c.Query); q.glosses != nil {
				t.Errorf("%s: ParseQuery(%q) has glosses %q", f, c.Query, showGlosses(q.glosses))
			}
		}
	}
}

func TestSearchChinese(t *testing.T) {
	english := []Doc{
		{Name: "docker__push_image", Tool: "push_image", Server: "docker", Description: "Push an image to a container registry"},
		{Name: "docker__pull_image", Tool: "pull_image", Server: "docker", Description: "Pull an image from a registry"},
		{Name: "gh__create_pull_request", Tool: "create_pull_request", Server: "gh", Description: "Open a pull request in a repository"},
		{Name: "gh__merge_pull_request", Tool: "merge_pull_request", Server: "gh", Description: "Merge a pull request"},
		{Name: "stripe__create_invoice", Tool: "create_invoice", Server: "stripe", Description: "Create an invoice for a customer"},
		{Name: "stripe__create_refund", Tool: "create_refund", Server: "stripe", Description: "Refund a payment"},
	}
	chinese := []Doc{
		{Name: "cl__invoice_resend", Tool: "invoice_resend", Server: "cl", Description: "重发发票邮件给客户"},
		{Name: "cl__refund_status", Tool: "refund_status", Server: "cl", Description: "查看处理进度"},
	}
	search := func(ix *Index, s string) []Hit {
		q, err := ParseQuery(s)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", s, err)
		}
		hits, _ := ix.Search(q, 3)
		return hits
	}
	ix := NewIndex(english)
	for q, want := range map[string]string{
		"把镜像推到镜像仓库":    "docker__push_image",
		"把鏡像推到鏡像倉庫":    "docker__push_image", // Traditional
		"帮我开个拉取请求":     "gh__create_pull_request",
		"把那个 PR 合并了吧":  "gh__merge_pull_request",
		"给客户退款":        "stripe__create_refund",
		"給客戶退款":        "stripe__create_refund",
		"给客户开一张发票":     "stripe__create_invoice",
		"的了吗":          "",
		"カレンダー":        "",
		"🚀推镜像🔥 docker": "docker__push_image",
	} {
		hits := search(ix, q)
		got := ""
		if len(hits) > 0 {
			got = hits[0].Name
		}
		if got != want {
			t.Errorf("top hit for %q = %q, want %q (hits %v)", q, got, want, hits)
		}
	}
	// Traditional ranks exactly as Simplified.
	if a, b := search(ix, "把镜像推到仓库"), search(ix, "把鏡像推到倉庫"); !reflect.DeepEqual(a, b) {
		t.Errorf("Simplified %v, Traditional %v", a, b)
	}
	// An expansion counts less than the English word itself.
	en, zh := search(ix, "invoice"), search(ix, "发票")
	if len(en) == 0 || len(zh) == 0 || en[0].Name != "stripe__create_invoice" || zh[0].Name != en[0].Name || zh[0].Score >= en[0].Score {
		t.Errorf("invoice: %v; 发票: %v, want the same tool first, scoring less", en, zh)
	}
	// A word the catalog has in Chinese is not expanded: 发票 reaches no English invoice tool.
	// A tool described in Chinese is not matched through English: 退款's "refund" reaches
	// stripe__create_refund, not cl__refund_status.
	mixed := NewIndex(append(english, chinese...))
	if hits := search(mixed, "发票"); len(hits) != 1 || hits[0].Name != "cl__invoice_resend" {
		t.Errorf("发票 with cl__invoice_resend in the catalog: %v, want it alone", hits)
	}
	if hits := search(mixed, "退款"); len(hits) != 1 || hits[0].Name != "stripe__create_refund" {
		t.Errorf("退款: %v, want stripe__create_refund alone", hits)
	}
}

// TestChineseCatalogUnmoved checks that a catalog described in Chinese ranks every
// CloudLedger request exactly as it would without the English of its words.
func TestChineseCatalogUnmoved(t *testing.T) {
	ix := NewIndex(readCatalog(t, "../bench/cloudledger/cloudledger.json", "cloudledger"))
	cases, err := LoadCases("../bench/cloudledger/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		q, err := ParseQuery(c.Query)
		if err != nil {
			t.Fatal(err)
		}
		with, _ := ix.Search(q, 10)
		q.glosses = nil
		without, _ := ix.Search(q, 10)
		if fmt.Sprint(with) != fmt.Sprint(without) {
			t.Errorf("%q: with glosses %v, without %v", c.Query, with, without)
		}
	}
}
