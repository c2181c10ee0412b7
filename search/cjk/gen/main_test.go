package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestSenseWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"to submit (a report etc)", []string{"submit"}},
		{"log (computing)", []string{"log"}},
		{"(email) attachment", []string{"attachment"}},
		{"variant of 發布|发布[fa1 bu4]", nil},
		{"old variant of 只[zhi3]", nil},
		{"surname Zha", nil},
		{"see 回覆|回复[hui2 fu4]", nil},
		{"CL:個|个[ge4]", nil},
		{"classifier for birds and certain animals", nil},
		{"also pr. [di4] or [di5] in poetry and songs", nil},
		{"Taiwan pr. [fa3]", nil},
		{"[pin1 yin1]", nil}, // pronunciation only
		{"to look up (e.g. a word in a dictionary)", []string{"look"}},
		{"one's own (possessive particle)", []string{"own"}},
		{"mirror image", []string{"mirror", "image"}},
		{"co-worker; colleague", []string{"co-worker", "colleague"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := senseWords(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("senseWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBuild(t *testing.T) {
	entries := []entry{
		{"日誌", "日志", "ri4 zhi4", []string{"journal", "log (computing)"}},
		{"看", "看", "kan1", []string{"to look after", "to take care of"}},
		{"看", "看", "kan4", []string{"to see; to look at", "to read", "to watch", "to visit"}},
		{"發", "发", "fa1", []string{"to send out", "to issue"}},
		{"髮", "发", "fa4", []string{"hair"}},
		{"發票", "发票", "fa1 piao4", []string{"invoice", "receipt or bill for purchase"}},
		{"柏林", "柏林", "Bo2 lin2", []string{"Berlin, capital of Germany"}},
		{"漢堡", "汉堡", "Han4 bao3", []string{"Hamburg (German city)"}},
		{"漢堡", "汉堡", "han4 bao3", []string{"(loanword) hamburger"}},
		{"張", "张", "Zhang1", []string{"surname Zhang"}},
		{"3D打印", "3D打印", "san1 D da3 yin4", []string{"to 3D print"}},
		{"一二三四五", "一二三四五", "yi1 er4 san1 si4 wu3", []string{"too long"}},
	}
	got := string(build(entries))
	want := strings.Join([]string{
		"发\tsend issue hair",
		"发票\tinvoice receipt bill",
		"日志\tlog journal",
		"日誌\tlog journal", // no entry says 誌 is 志
		"柏林\t*berlin capital",
		"汉堡\thamburger",
		"漢堡\thamburger", // no entry says 漢 is 汉
		"發\tsend issue", // not 发's words, which have 髮's too
		"看\tsee look read",
		"髮\thair",
		"#trad",
		"張\t张",
		"發\t发",
		"髮\t发",
		"",
	}, "\n")
	if got != want {
		t.Errorf("build =\n%s\nwant\n%s", got, want)
	}
}
