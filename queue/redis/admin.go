package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/corral-go/corral/queue/driver"
)

// The operator's verbs (driver.Admin).
//
// A pause is the key paused under the queue's prefix, which the receive script reads before it
// takes a job: once SetPaused(true) has returned, no Receive of any process takes a job until
// SetPaused(false).
//
// A cancel of a job waiting (in the stream but not delivered, delayed, or behind its key) buries
// it in the same script. A job in flight is marked (cx: the generation of its delivery): its
// consumer learns of it from its next lease renewal (Extend returns ErrCanceled), a Nack or
// Release of it buries it, and if its process died, the Receive that reclaims its entry buries
// it.
//
// A listing reads every stored job (or every dead letter) of the queue, then filters, orders
// and pages them in this process: each List or Count costs a pass over the queue, which suits
// an operator's use, not a loop.

// listScript: ARGV id (or ” for every stored job). Returns {now-ms, lease-ms, jobs}, each job
// {id, key, body, enq, nbn, sb, ver, att, hist, state, next-ms, holder, idle-ms, canceling}.
var listScript = goredis.NewScript(luaCommon + `
local t = now()
local lease = redis.call('HGET', P .. 'cfg', 'lease') or ''
local ids
if ARGV[1] ~= '' then
  ids = {}
  if redis.call('EXISTS', P .. 'j:' .. ARGV[1]) == 1 then ids = {ARGV[1]} end
else
  ids = redis.call('ZRANGE', P .. 'o', 0, -1)
end
local out = {}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', P .. 'j:' .. id, 'key', 'body', 'enq', 'nbn', 'sb', 'ver', 'att', 'hist',
    'sid', 'nb', 'gen', 'cx')
  local key, sid = f[1] or '', f[9] or ''
  local state, nxt, holder, idle, canceling = 'ready', '', '', '', '0'
  local p = {}
  if sid ~= '' then p = redis.call('XPENDING', P .. 's', 'g', sid, sid, 1) end
  if #p > 0 then
    state, holder, idle = 'in_flight', p[1][2], tostring(p[1][3])
    if f[12] == f[11] then canceling = '1' end
  else
    local ds = redis.call('ZSCORE', P .. 'd', id)
    if ds then
      state, nxt = 'delayed', tostring(ds)
    elseif key ~= '' and redis.call('LINDEX', P .. 'k:' .. key, 0) ~= id and tonumber(f[10] or '0') > t then
      state, nxt = 'delayed', f[10]
    end
  end
  table.insert(out, {id, key, f[2] or '', f[3] or '0', f[4] or '0', f[5] or '0', f[6] or '0', f[7] or '0',
    f[8] or '', state, nxt, holder, idle, canceling})
end
return {tostring(t), lease, out}
`)

// cancelScript: ARGV id at-ns dead-limit attempt-json. Returns "missing", "dead" (a dead letter:
// nothing to do), "marked" (in flight) or "buried".
var cancelScript = goredis.NewScript(luaCommon + `
local id = ARGV[1]
local jk = P .. 'j:' .. id
if redis.call('EXISTS', jk) == 0 then
  if redis.call('HGET', P .. 'xi', id) then return 'dead' end
  return 'missing'
end
local sid, gen = unpack(redis.call('HMGET', jk, 'sid', 'gen'))
if sid and sid ~= '' and #redis.call('XPENDING', P .. 's', 'g', sid, sid, 1) > 0 then
  redis.call('HSET', jk, 'cx', gen)
  return 'marked'
end
redis.call('HSET', jk, 'hist', append(redis.call('HGET', jk, 'hist'), ARGV[4]))
redis.call('INCR', P .. 'c:dead')
bury(id, 'canceled', ARGV[2], tonumber(ARGV[3]), now())
return 'buried'
`)

// deadGetScript: ARGV id. Returns the fields of the dead letter of id, or an empty array.
var deadGetScript = goredis.NewScript(luaCommon + `
local eid = redis.call('HGET', P .. 'xi', ARGV[1])
if not eid then return {} end
local e = redis.call('XRANGE', P .. 'x', eid, eid)[1]
if not e then return {} end
return e[2]
`)

// pauseScript: ARGV "1" to pause, "0" to resume.
var pauseScript = goredis.NewScript(luaCommon + `
if ARGV[1] == '1' then redis.call('SET', P .. 'paused', '1') else redis.call('DEL', P .. 'paused') end
return 1
`)

// List implements driver.Admin.
func (b *Backend) List(ctx context.Context, f driver.Filter) ([]driver.JobInfo, error) {
	if err := b.life.Check(calls); err != nil { // before the filter, as every method
		return nil, err
	}
	return driver.NewGather(func() error { return b.life.Check(calls) }, b.DeadLetters, b.storedJobs).List(ctx, f)
}

// Count implements driver.Admin.
func (b *Backend) Count(ctx context.Context, f driver.Filter) (int, error) {
	return driver.NewGather(func() error { return b.life.Check(calls) }, b.DeadLetters, b.storedJobs).Count(ctx, f)
}

// storedJobs reads every stored job.
func (b *Backend) storedJobs(ctx context.Context) ([]driver.JobInfo, error) {
	return b.jobInfos(ctx, "")
}

// jobInfos reads the stored job id, or every stored job if id is "".
func (b *Backend) jobInfos(ctx context.Context, id string) ([]driver.JobInfo, error) {
	v, err := b.run(ctx, "list jobs", listScript, id)
	if err != nil {
		return nil, err
	}
	top, _ := v.([]any)
	if len(top) != 3 {
		return nil, fmt.Errorf("redis: list jobs: unexpected reply %v", v)
	}
	head := strs([]any{top[0], top[1]})
	nowMs, _ := strconv.ParseInt(head[0], 10, 64)
	leaseMs, _ := strconv.ParseInt(head[1], 10, 64)
	rows, _ := top[2].([]any)
	out := make([]driver.JobInfo, 0, len(rows))
	for _, row := range rows {
		out = append(out, jobInfo(strs(row), nowMs, leaseMs))
	}
	return out, nil
}

// jobInfo makes a JobInfo of a row of listScript, read at nowMs with the queue's lease.
func jobInfo(r []string, nowMs, leaseMs int64) driver.JobInfo {
	att, _ := strconv.Atoi(r[7])
	ver, _ := strconv.Atoi(r[6])
	info := driver.JobInfo{
		Message: driver.Message{ID: r[0], Key: r[1], Body: []byte(r[2]), EnqueuedAt: parseNanos(r[3]),
			NotBefore: parseNanos(r[4]), StartBy: parseNanos(r[5]), Version: ver, Attempt: att},
		JobStatus: driver.JobStatus{State: driver.JobState(r[9]), LeaseHolder: r[11], Canceling: r[13] == "1"},
	}
	if r[8] != "" {
		_ = json.Unmarshal([]byte(r[8]), &info.History)
	}
	if ms, err := strconv.ParseFloat(r[10], 64); err == nil {
		info.NextRun = time.UnixMilli(int64(ms))
	}
	if idle, err := strconv.ParseInt(r[12], 10, 64); err == nil && leaseMs > 0 {
		info.LeaseEnd = time.UnixMilli(nowMs + leaseMs - idle)
	}
	return info
}

// Get implements driver.Admin.
func (b *Backend) Get(ctx context.Context, id string) (driver.JobInfo, error) {
	if err := b.life.Check(calls); err != nil {
		return driver.JobInfo{}, err
	}
	jobs, err := b.jobInfos(ctx, id)
	if err != nil {
		return driver.JobInfo{}, err
	}
	if len(jobs) == 1 {
		return jobs[0], nil
	}
	v, err := b.run(ctx, "get a job", deadGetScript, id)
	if err != nil {
		return driver.JobInfo{}, err
	}
	fs := strs(v)
	if len(fs) == 0 {
		return driver.JobInfo{}, driver.ErrNoJob
	}
	m := make(map[string]any, len(fs)/2)
	for i := 0; i+1 < len(fs); i += 2 {
		m[fs[i]] = fs[i+1]
	}
	dm := deadMessage(m)
	return driver.DeadInfo(&dm), nil
}

// Cancel implements driver.Admin.
func (b *Backend) Cancel(ctx context.Context, id string) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	now := time.Now()
	aj, err := json.Marshal(driver.Attempt{Start: now, End: now, Error: driver.ErrCanceled.Error()})
	if err != nil {
		return err
	}
	v, err := b.run(ctx, "cancel", cancelScript, id, nanos(now), b.cfg.DeadLetterLimit, aj)
	if err != nil {
		return err
	}
	switch v {
	case "missing":
		return driver.ErrNoJob
	case "buried":
		b.signal() // its key's next job may be ready
	}
	return nil
}

// SetPaused implements driver.Admin.
func (b *Backend) SetPaused(ctx context.Context, paused bool) error {
	if err := b.life.Check(calls); err != nil {
		return err
	}
	flag := "0"
	if paused {
		flag = "1"
	}
	if _, err := b.run(ctx, "pause", pauseScript, flag); err != nil {
		return err
	}
	if !paused {
		b.signal()
	}
	return nil
}

var _ driver.Admin = (*Backend)(nil)
