package watchcache

import (
	"sort"
	"strings"
)

// tree is an immutable, persistent B+tree of elements ordered by key.
// Every update returns a new tree that shares all untouched nodes with the
// old one (path copying), so taking a snapshot is free: a reader keeps the
// root it was given and iterates without a lock while writers move on.
// The zero value is the empty tree.
//
// Nodes are never merged on delete (only emptied nodes are dropped): the
// cache's workload is dominated by updates in place, and underfull nodes
// only cost a little memory.
type tree struct {
	root *node
}

// maxNodeSize bounds the items of a leaf and the children of an inner
// node. 64 keeps a 100k-object tree at three levels while a path copy
// stays around 1.5 KiB.
const maxNodeSize = 64

type node struct {
	// count is the number of elements in the subtree; it makes len and
	// rank O(log n), which continue tokens need for remainingItemCount.
	count int
	// items is set for leaves, sorted by key.
	items []*element
	// kids is set for inner nodes; firsts[i] is the smallest key under
	// kids[i].
	kids   []*node
	firsts []string
}

func (n *node) leaf() bool { return n.kids == nil }

func (n *node) first() string {
	if n.leaf() {
		return n.items[0].key
	}
	return n.firsts[0]
}

// Len is the number of elements.
func (t tree) Len() int {
	if t.root == nil {
		return 0
	}
	return t.root.count
}

// Get returns the element with the key, or nil.
func (t tree) Get(key string) *element {
	n := t.root
	if n == nil {
		return nil
	}
	for !n.leaf() {
		n = n.kids[childFor(n, key)]
	}
	i := sort.Search(len(n.items), func(i int) bool { return n.items[i].key >= key })
	if i < len(n.items) && n.items[i].key == key {
		return n.items[i]
	}
	return nil
}

// childFor is the index of the child whose range holds key.
func childFor(n *node, key string) int {
	// The last child whose first key is <= key; keys smaller than every
	// first key belong to child 0.
	i := sort.Search(len(n.firsts), func(i int) bool { return n.firsts[i] > key })
	if i > 0 {
		i--
	}
	return i
}

// Put returns a tree with e stored under e.key, replacing any element with
// the same key.
func (t tree) Put(e *element) tree {
	if t.root == nil {
		return tree{root: &node{count: 1, items: []*element{e}}}
	}
	left, right := put(t.root, e)
	if right == nil {
		return tree{root: left}
	}
	root := &node{
		count:  left.count + right.count,
		kids:   []*node{left, right},
		firsts: []string{left.first(), right.first()},
	}
	return tree{root: root}
}

// put returns the copied node and, when it had to split, its new right
// sibling.
func put(n *node, e *element) (*node, *node) {
	if n.leaf() {
		i := sort.Search(len(n.items), func(i int) bool { return n.items[i].key >= e.key })
		if i < len(n.items) && n.items[i].key == e.key {
			items := make([]*element, len(n.items))
			copy(items, n.items)
			items[i] = e
			return &node{count: n.count, items: items}, nil
		}
		items := make([]*element, len(n.items)+1)
		copy(items, n.items[:i])
		items[i] = e
		copy(items[i+1:], n.items[i:])
		if len(items) <= maxNodeSize {
			return &node{count: len(items), items: items}, nil
		}
		half := len(items) / 2
		return &node{count: half, items: items[:half:half]}, &node{count: len(items) - half, items: items[half:]}
	}
	i := childFor(n, e.key)
	before := n.kids[i].count
	kid, split := put(n.kids[i], e)
	grow := kid.count - before
	if split != nil {
		grow += split.count
	}
	size := len(n.kids)
	if split != nil {
		size++
	}
	kids := make([]*node, size)
	firsts := make([]string, size)
	copy(kids, n.kids[:i])
	copy(firsts, n.firsts[:i])
	kids[i], firsts[i] = kid, kid.first()
	if split != nil {
		kids[i+1], firsts[i+1] = split, split.first()
		copy(kids[i+2:], n.kids[i+1:])
		copy(firsts[i+2:], n.firsts[i+1:])
	} else {
		copy(kids[i+1:], n.kids[i+1:])
		copy(firsts[i+1:], n.firsts[i+1:])
	}
	count := n.count + grow
	if size <= maxNodeSize {
		return &node{count: count, kids: kids, firsts: firsts}, nil
	}
	half := size / 2
	l := &node{kids: kids[:half:half], firsts: firsts[:half:half]}
	r := &node{kids: kids[half:], firsts: firsts[half:]}
	for _, k := range l.kids {
		l.count += k.count
	}
	r.count = count - l.count
	return l, r
}

// Delete returns a tree without the key (the same tree if it is absent).
func (t tree) Delete(key string) tree {
	if t.root == nil || t.Get(key) == nil {
		return t
	}
	root := del(t.root, key)
	for root != nil && !root.leaf() && len(root.kids) == 1 {
		root = root.kids[0]
	}
	return tree{root: root}
}

// del removes a key known to be present; it returns nil for a node left
// empty.
func del(n *node, key string) *node {
	if n.leaf() {
		if len(n.items) == 1 {
			return nil
		}
		i := sort.Search(len(n.items), func(i int) bool { return n.items[i].key >= key })
		items := make([]*element, 0, len(n.items)-1)
		items = append(items, n.items[:i]...)
		items = append(items, n.items[i+1:]...)
		return &node{count: len(items), items: items}
	}
	i := childFor(n, key)
	kid := del(n.kids[i], key)
	if kid == nil {
		if len(n.kids) == 1 {
			return nil
		}
		kids := make([]*node, 0, len(n.kids)-1)
		kids = append(kids, n.kids[:i]...)
		kids = append(kids, n.kids[i+1:]...)
		firsts := make([]string, 0, len(n.kids)-1)
		firsts = append(firsts, n.firsts[:i]...)
		firsts = append(firsts, n.firsts[i+1:]...)
		return &node{count: n.count - 1, kids: kids, firsts: firsts}
	}
	kids := make([]*node, len(n.kids))
	copy(kids, n.kids)
	firsts := make([]string, len(n.firsts))
	copy(firsts, n.firsts)
	kids[i], firsts[i] = kid, kid.first()
	return &node{count: n.count - 1, kids: kids, firsts: firsts}
}

// Ascend calls fn for every element with key >= from, in key order, until
// fn returns false.
func (t tree) Ascend(from string, fn func(*element) bool) {
	if t.root != nil {
		ascend(t.root, from, fn)
	}
}

func ascend(n *node, from string, fn func(*element) bool) bool {
	if n.leaf() {
		i := sort.Search(len(n.items), func(i int) bool { return n.items[i].key >= from })
		for _, e := range n.items[i:] {
			if !fn(e) {
				return false
			}
		}
		return true
	}
	for i := childFor(n, from); i < len(n.kids); i++ {
		if !ascend(n.kids[i], from, fn) {
			return false
		}
	}
	return true
}

// AscendPrefix calls fn for every element whose key starts with prefix and
// is >= from, in key order, until fn returns false.
func (t tree) AscendPrefix(prefix, from string, fn func(*element) bool) {
	if from < prefix {
		from = prefix
	}
	t.Ascend(from, func(e *element) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		return fn(e)
	})
}

// Rank is the number of elements with a key < key.
func (t tree) Rank(key string) int {
	n := t.root
	rank := 0
	for n != nil {
		if n.leaf() {
			return rank + sort.Search(len(n.items), func(i int) bool { return n.items[i].key >= key })
		}
		i := childFor(n, key)
		for _, k := range n.kids[:i] {
			rank += k.count
		}
		n = n.kids[i]
	}
	return rank
}

// CountPrefix is the number of elements whose key starts with prefix and
// is >= from.
func (t tree) CountPrefix(prefix, from string) int {
	if from < prefix {
		from = prefix
	}
	end := prefixEnd(prefix)
	hi := t.Len()
	if end != "" {
		hi = t.Rank(end)
	}
	n := hi - t.Rank(from)
	if n < 0 {
		return 0
	}
	return n
}

// prefixEnd is the smallest string greater than every string with the
// prefix, or "" when there is none (a prefix of only 0xff bytes).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// buildTree builds a tree from elements sorted by key with unique keys, in
// O(n): leaves are filled to three quarters so that the first writes do
// not split every node.
func buildTree(sorted []*element) tree {
	if len(sorted) == 0 {
		return tree{}
	}
	const fill = maxNodeSize * 3 / 4
	var level []*node
	for i := 0; i < len(sorted); i += fill {
		j := min(i+fill, len(sorted))
		items := make([]*element, j-i)
		copy(items, sorted[i:j])
		level = append(level, &node{count: len(items), items: items})
	}
	for len(level) > 1 {
		var up []*node
		for i := 0; i < len(level); i += fill {
			j := min(i+fill, len(level))
			n := &node{kids: make([]*node, 0, j-i), firsts: make([]string, 0, j-i)}
			for _, k := range level[i:j] {
				n.kids = append(n.kids, k)
				n.firsts = append(n.firsts, k.first())
				n.count += k.count
			}
			up = append(up, n)
		}
		level = up
	}
	return tree{root: level[0]}
}
