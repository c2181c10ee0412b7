package search

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestDebugCloud(t *testing.T) {
	loadCJK(t)
	cloud := readCatalog(t, "../bench/cloudledger/cloudledger.json", "cloudledger")
	ix := NewIndex(cloud)
	queries := evalQueries(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, prune := range []bool{true, false, true, false} {
		var lat []time.Duration
		for range 5 {
			for _, q := range queries {
				start := threadCPU()
				ix.search(q, 5, prune, nil)
				lat = append(lat, threadCPU()-start)
			}
		}
		slices.Sort(lat)
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		fmt.Printf("cloud prune=%v mean %v p50 %v p99 %v\n", prune, sum/time.Duration(len(lat)), lat[len(lat)/2], lat[len(lat)*99/100])
	}
}
