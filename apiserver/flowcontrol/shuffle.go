package flowcontrol

// flowHash identifies a flow (a FlowSchema and the distinguisher its
// method takes from the request) for shuffle sharding: FNV-1a over the
// schema's name, a zero byte and the distinguisher, without allocating.
func flowHash(schema, distinguisher string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(schema); i++ {
		h = (h ^ uint64(schema[i])) * prime
	}
	h *= prime // the zero byte
	for i := 0; i < len(distinguisher); i++ {
		h = (h ^ uint64(distinguisher[i])) * prime
	}
	return h
}

// maxHand bounds the hands dealt without allocating; validation keeps
// handSize to what 60 bits of hash can deal, and larger hands still work.
const maxHand = 16

// deal is shuffle sharding: the hash picks hand distinct queues of deck,
// the i-th card being the hash's i-th digit in a mixed radix (deck,
// deck-1, ...) counted among the queues not yet picked. A flow always
// gets the same hand, and two flows rarely get the same one. buf is
// scratch space for the result.
func deal(hash uint64, deck, hand int, buf []int) []int {
	cards := buf[:0]
	for i := 0; i < hand; i++ {
		n := uint64(deck - i)
		r := int(hash % n)
		hash /= n
		// The r-th card not picked yet: step over the picked ones at or
		// below it, which cards holds in increasing order.
		card := r
		for _, c := range cards {
			if c <= card {
				card++
			}
		}
		cards = append(cards, card)
		for j := len(cards) - 1; j > 0 && cards[j-1] > cards[j]; j-- {
			cards[j-1], cards[j] = cards[j], cards[j-1]
		}
	}
	return cards
}
