package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A replica holds the calls of 2026-07-28 clients that wait for their client's input
// (proxy.Relay), and the client's next request may reach another replica. That one passes
// the answers on through Redis: each replica reads a list of its own, and each answer comes
// back on a list of its own. A replica that stops reading is taken for gone within
// aliveFor, and the calls it held are then answered as ended.

const (
	pollEvery = time.Second     // how long a read of a list blocks before looking around
	aliveFor  = 5 * time.Second // a replica that has not read its list for this long is gone
	answerFor = time.Minute     // an answer nobody takes is dropped after this
)

func inputKey(id string) string      { return "toolsift:input:" + id }
func inboxKey(process string) string { return "toolsift:relay:" + process }
func aliveKey(process string) string { return "toolsift:alive:" + process }

type envelope struct {
	ID    string          `json:"id"`
	Reply string          `json:"reply"`
	Msg   json.RawMessage `json:"msg"`
}

// Hold records, for ttl, that this process holds the call named id.
func (r *Redis) Hold(ctx context.Context, id string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return r.note(r.c.Set(ctx, inputKey(id), r.process, ttl).Err())
}

// Release forgets that this process holds id.
func (r *Redis) Release(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r.note(r.c.Del(ctx, inputKey(id)).Err())
}

// Send passes msg to the process that holds id and waits for its answer; held is false
// when no live process holds it, or its process went away before answering.
func (r *Redis) Send(ctx context.Context, id string, msg []byte) (answer []byte, held bool, err error) {
	holder, err := r.c.Get(ctx, inputKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("finding the replica that holds the call: %w", r.note(err))
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	reply := "toolsift:reply:" + hex.EncodeToString(token)
	env, _ := json.Marshal(envelope{ID: id, Reply: reply, Msg: msg})
	inbox := inboxKey(holder)
	if _, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, inbox, env)
		p.Expire(ctx, inbox, 2*aliveFor)
		return nil
	}); err != nil {
		return nil, false, fmt.Errorf("passing the answers to the replica that holds the call: %w", r.note(err))
	}
	for {
		n, err := r.c.Exists(ctx, aliveKey(holder)).Result()
		if err != nil {
			return nil, false, fmt.Errorf("waiting for the replica that holds the call: %w", r.note(err))
		}
		if n == 0 {
			return nil, false, nil
		}
		res, err := r.blocked.BLPop(ctx, pollEvery, reply).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, false, fmt.Errorf("waiting for the replica that holds the call: %w", r.note(err))
		default:
			return []byte(res[1]), true, nil
		}
	}
}

// Serve answers, with handle, what other replicas Send to this one, until ctx ends; it
// returns once the answers under way are sent.
func (r *Redis) Serve(ctx context.Context, handle func(ctx context.Context, id string, msg []byte) []byte) {
	var answering sync.WaitGroup
	defer answering.Wait()
	for ctx.Err() == nil {
		r.c.Set(ctx, aliveKey(r.process), 1, aliveFor)
		res, err := r.blocked.BLPop(ctx, pollEvery, inboxKey(r.process)).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				// Redis is down (Healthy says so): look again a little later.
				select {
				case <-ctx.Done():
				case <-time.After(pollEvery):
				}
			}
			continue
		}
		var env envelope
		if json.Unmarshal([]byte(res[1]), &env) != nil {
			continue
		}
		answering.Go(func() {
			out := handle(ctx, env.ID, env.Msg)
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
			defer cancel()
			_, err := r.c.TxPipelined(actx, func(p redis.Pipeliner) error {
				p.RPush(actx, env.Reply, out)
				p.Expire(actx, env.Reply, answerFor)
				return nil
			})
			// Lost, the answer is waited for until the sender's deadline; Healthy says why.
			r.note(err)
		})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	r.c.Del(ctx, aliveKey(r.process))
}
