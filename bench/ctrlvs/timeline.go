package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timelineEvent is one pod event as the benchmark saw it: with --timeline,
// every event of the benchmark's pods is written, one JSON line each, so
// that the gaps between one side's steps (a Ready pod to the next
// deletion, a deletion to the next creation) can be compared with the
// other side's.
type timelineEvent struct {
	At       time.Time `json:"at"`
	Type     string    `json:"type"`
	NS       string    `json:"ns"`
	Pod      string    `json:"pod"`
	Node     string    `json:"node,omitempty"`
	Hash     string    `json:"hash,omitempty"`
	Deleting bool      `json:"deleting,omitempty"`
	Ready    bool      `json:"ready,omitempty"`
}

// timeline writes every event of the pods labelled app=ctrlvs to path
// until ctx ends.
func (b *bench) timeline(ctx context.Context, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	w, err := b.client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: "app=ctrlvs"})
	if err != nil {
		f.Close()
		return fmt.Errorf("timeline: watch pods: %w", err)
	}
	go func() {
		defer f.Close()
		defer w.Stop()
		enc := json.NewEncoder(f)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*v1.Pod)
				if !isPod {
					continue
				}
				ready := false
				for _, c := range p.Status.Conditions {
					if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
						ready = true
					}
				}
				_ = enc.Encode(timelineEvent{At: time.Now(), Type: string(ev.Type), NS: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName,
					Hash: p.Labels["controller-revision-hash"], Deleting: p.DeletionTimestamp != nil, Ready: ready})
			}
		}
	}()
	return nil
}
