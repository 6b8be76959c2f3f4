package chaoscheck

import (
	"fmt"
	"sort"
)

// Write is one write request a writer made to object Name, carrying
// sequence number Seq (increasing per object): a create or update, or a
// Delete. Acked creates and updates have the RV the server answered;
// deletes and unknown writes (Acked false) have none.
type Write struct {
	Name   string
	Seq    int64
	RV     int64
	Acked  bool
	Delete bool
}

// Object is an object's final state: its sequence number and
// resourceVersion in a fresh list, and its mod revision and sequence number
// in etcd (0 when the key is absent).
type Object struct {
	Seq     int64
	RV      int64
	EtcdRev int64
	EtcdSeq int64
}

// WriteReport is the verdict on the writes.
type WriteReport struct {
	Acknowledged int
	Unknown      int
	Lost         int
	// Invented counts objects whose final sequence number no write carried.
	Invented int
	Problems []string // the first few, for the log
}

const maxProblems = 20

func (r *WriteReport) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// CheckWrites judges writes against the final objects by name.
func CheckWrites(writes []Write, final map[string]Object) WriteReport {
	var r WriteReport
	type seqs struct {
		lastAcked     Write
		unknownDelete int64 // newest seq of an unknown delete
		carried       map[int64]bool
	}
	by := map[string]*seqs{}
	var names []string
	for _, w := range writes {
		s := by[w.Name]
		if s == nil {
			s = &seqs{carried: map[int64]bool{}}
			by[w.Name] = s
			names = append(names, w.Name)
		}
		if !w.Delete {
			s.carried[w.Seq] = true
		}
		if !w.Acked {
			r.Unknown++
			if w.Delete {
				s.unknownDelete = max(s.unknownDelete, w.Seq)
			}
			continue
		}
		r.Acknowledged++
		if w.Seq > s.lastAcked.Seq {
			s.lastAcked = w
		}
	}
	sort.Strings(names)
	for _, n := range names {
		s := by[n]
		last := s.lastAcked
		o, ok := final[n]
		if !ok {
			// Gone is right after an acknowledged delete, or an unknown
			// one newer than the last acknowledged write.
			if last.Acked && !last.Delete && s.unknownDelete < last.Seq {
				r.Lost++
				r.problem("%s: acknowledged write seq %d (rv %d) but the object is not in the list", n, last.Seq, last.RV)
			}
			continue
		}
		// One object counts once: its last acknowledged write is lost
		// from the list, or from etcd, or the two disagree.
		switch {
		case last.Acked && last.Delete && o.Seq < last.Seq:
			r.Lost++
			r.problem("%s: acknowledged delete seq %d, list has seq %d", n, last.Seq, o.Seq)
		case last.Acked && !last.Delete && (o.Seq < last.Seq || o.RV < last.RV):
			r.Lost++
			r.problem("%s: acknowledged write seq %d rv %d, list has seq %d rv %d", n, last.Seq, last.RV, o.Seq, o.RV)
		case last.Acked && o.EtcdRev < last.RV:
			r.Lost++
			r.problem("%s: acknowledged write rv %d, etcd has mod revision %d", n, last.RV, o.EtcdRev)
		case o.EtcdRev != o.RV || o.EtcdSeq != o.Seq:
			r.Lost++
			r.problem("%s: list has rv %d seq %d, etcd mod revision %d seq %d", n, o.RV, o.Seq, o.EtcdRev, o.EtcdSeq)
		}
		if !s.carried[o.Seq] {
			r.Invented++
			r.problem("%s: final seq %d was carried by no create or update", n, o.Seq)
		}
	}
	return r
}
