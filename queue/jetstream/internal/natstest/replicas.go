package natstest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Replicas describes, node by node, each node's own copy of the stream named stream and of its
// consumers, as the node's monitoring endpoint (/jsz) reports them: how many messages it stores
// and their first and last sequence, and for each consumer the stream sequence it has
// delivered up to, its ack floor, and what it counts pending and waiting. The JetStream API
// answers from the leaders only; this shows whether the replicas agree with them. A node that
// is down or paused is described by its error. Each node gets a few seconds.
func (c *Cluster) Replicas(stream string) string {
	var b strings.Builder
	for _, nd := range c.Nodes {
		fmt.Fprintf(&b, "\n%s: ", nd.Name)
		if nd.Paused() || !nd.Running() {
			b.WriteString("not serving")
			continue
		}
		v, err := nd.replica(stream)
		if err != nil {
			b.WriteString(err.Error())
			continue
		}
		b.WriteString(v)
	}
	return b.String()
}

// jsz is the part of nats-server's /jsz answer that replica reads.
type jsz struct {
	Accounts []struct {
		Streams []struct {
			Name  string `json:"name"`
			State struct {
				Msgs     uint64 `json:"messages"`
				FirstSeq uint64 `json:"first_seq"`
				LastSeq  uint64 `json:"last_seq"`
				Deleted  int    `json:"num_deleted"`
			} `json:"state"`
			Consumers []struct {
				Name      string   `json:"name"`
				Delivered sequence `json:"delivered"`
				AckFloor  sequence `json:"ack_floor"`
				Pending   uint64   `json:"num_pending"`
				AckPend   int      `json:"num_ack_pending"`
				Waiting   int      `json:"num_waiting"`
			} `json:"consumer_detail"`
		} `json:"stream_detail"`
	} `json:"account_details"`
}

type sequence struct {
	Consumer uint64 `json:"consumer_seq"`
	Stream   uint64 `json:"stream_seq"`
}

// monitorClient keeps no connection open after a request: a test's goroutines end with it.
var monitorClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// replica describes nd's copy of stream and its consumers (see Replicas).
func (nd *Node) replica(stream string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		nd.Monitor+"/jsz?accounts=true&streams=true&consumers=true", nil)
	if err != nil {
		return "", err
	}
	resp, err := monitorClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var j jsz
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		return "", fmt.Errorf("jsz: %w", err)
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			if s.Name != stream {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "msgs %d seq %d-%d deleted %d", s.State.Msgs, s.State.FirstSeq, s.State.LastSeq, s.State.Deleted)
			for _, c := range s.Consumers {
				fmt.Fprintf(&b, "; consumer %s delivered %d/%d ack floor %d/%d pending %d ack pending %d waiting %d",
					c.Name, c.Delivered.Consumer, c.Delivered.Stream, c.AckFloor.Consumer, c.AckFloor.Stream,
					c.Pending, c.AckPend, c.Waiting)
			}
			return b.String(), nil
		}
	}
	return "no copy of " + stream, nil
}
