package upstream

import (
	"crypto/rand"
	"encoding/json"
	"sync"
)

// progressRouter routes the progress notifications one server sends to the calls to it that
// asked for them. Each server has its own, so that a server can report progress only on
// calls it is serving, never on another server's. Calls come and go while the server
// notifies, so its methods may be called concurrently.
type progressRouter struct {
	handlers sync.Map // token sent upstream (string) → func(params json.RawMessage)
}

// add makes a token to send upstream in place of the caller's, and until remove is called
// passes the params of each progress notification carrying it to progress, with the
// caller's token restored. Tokens are made per call, so that two clients' tokens never meet
// upstream, and random, so that a server cannot guess the token of a call it is not serving.
func (r *progressRouter) add(callerToken any, progress func(json.RawMessage)) (token string, remove func()) {
	token = "toolsift-" + rand.Text()
	r.handlers.Store(token, func(raw json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		orig, _ := json.Marshal(callerToken)
		m["progressToken"] = orig
		out, _ := json.Marshal(m)
		progress(out)
	})
	return token, func() { r.handlers.Delete(token) }
}

// route passes the params of a notifications/progress to the call whose token they carry,
// if it is still in flight.
func (r *progressRouter) route(params json.RawMessage) {
	var prog struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &prog) != nil {
		return
	}
	tok, ok := prog.Token.(string)
	if !ok {
		return
	}
	if h, ok := r.handlers.Load(tok); ok {
		h.(func(json.RawMessage))(params)
	}
}
