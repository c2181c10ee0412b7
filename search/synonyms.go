package search

import "strings"

// synonymGroups are words that tools and the people who call them use for the same thing.
// They are the general vocabulary of tool APIs (verbs such as get/fetch/read and the nouns of
// common services), not fixes for particular queries. A query term also matches the other
// words of its groups, at weightSynonym. Chinese rows carry the same verbs, for requests
// written in Chinese.
var synonymGroups = []string{
	// verbs
	"get fetch read retrieve show view see display look check open",
	"create add new make insert open start register",
	"delete remove drop erase destroy purge discard trash unregister",
	"update edit modify change set patch alter adjust amend",
	"list enumerate browse all",
	"send post notify publish deliver dm",
	"search find query lookup look seek grep locate filter discover",
	"cancel stop abort terminate end halt kill disable pause quit",
	"run execute exec invoke launch trigger perform evaluate eval",
	"write save store put persist record keep remember memorize",
	"upload attach put",
	"download export fetch save",
	"close resolve complete finish done archive",
	"schedule book plan arrange reschedule postpone move",
	"merge combine join ship",
	"deploy ship release publish rollout",
	"copy fork clone duplicate",
	"navigate go visit goto open browse",
	"click press tap",
	"type fill enter input",
	"screenshot capture snapshot grab",
	"scale resize",
	"install setup",
	"reply respond answer",
	"analyze inspect diagnose investigate debug audit",
	"convert transform translate",
	"rename move",
	"refund reimburse repay",
	"remember memorize memory recall",
	"money fund funds balance cash",
	"invoice bill charge",
	// nouns
	"directory folder dir",
	"file document doc",
	"issue bug ticket defect problem",
	"task todo chore item",
	"event meeting appointment",
	"message msg text sms chat dm",
	"email mail inbox",
	"channel room",
	"repository repo codebase",
	"commit revision changeset",
	"page tab website webpage site url",
	"javascript js script",
	"database db",
	"record row entry",
	"user member person people profile account",
	"customer client",
	"payment charge transaction",
	"subscription plan membership",
	"coupon discount promo voucher",
	"place location address venue",
	"direction route drive travel distance",
	"container pod",
	"secret credential password token key",
	"price cost pricing",
	"error exception crash failure",
	"schema field structure column",
	"image picture photo icon png jpg",
	"web internet online",
	"observation fact note",
	"entity node",
	"call phone dial",
	"log logs",
	// Chinese
	"查 查询 查看 查找 搜索 找",
	"改 修改 更改 变更 更新 编辑 换 更换",
	"删 删除 移除 去掉 注销",
	"加 添加 增加 新增 新建 创建",
	"发 发送 重发",
	"取消 撤销 撤回 停止 停掉 关闭",
	"列出 列表",
}

// pairSynonyms map two-word phrases (phrasal verbs, mostly) to the word tools use.
var pairSynonyms = map[[2]string]string{
	{"money", "back"}: "refund",
	{"sign", "in"}:    "login",
	{"log", "in"}:     "login",
	{"look", "up"}:    "search",
	{"set", "up"}:     "install",
	{"clean", "up"}:   "delete",
	{"shut", "down"}:  "stop",
	{"turn", "off"}:   "disable",
	{"turn", "on"}:    "enable",
	{"sign", "up"}:    "register",
}

// phraseSynonyms expand an abbreviation to the words it stands for.
var phraseSynonyms = map[string]string{
	"pr":  "pull request",
	"mr":  "merge request",
	"k8s": "kubernetes",
	"sql": "database query",
	"vm":  "virtual machine",
	"ci":  "check status",
}

// synonyms maps a term to the other terms of its groups, all as Tokens makes them.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range strings.Fields(g) {
			terms = append(terms, termOf(w))
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !contains(m[t], u) {
					m[t] = append(m[t], u)
				}
			}
		}
	}
	for abbr, phrase := range phraseSynonyms {
		for _, w := range strings.Fields(phrase) {
			t := termOf(w)
			if !contains(m[abbr], t) {
				m[abbr] = append(m[abbr], t)
			}
		}
	}
	return m
}()

// termOf returns the index term of a single word, bypassing stop words: synonym tables list
// words like "all" or "set" that are meaningful only next to others.
func termOf(w string) string {
	if isCJK(firstRune(w)) {
		return w
	}
	return Stem(strings.ToLower(w))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
