// Command corio-peers is the Go side of corio-bench's scheduler cases: the same work as the
// Rust children, reported the same way (one "@key value" line per result on stdout).
//
// corio-bench embeds this file, writes it to its cache directory (target/corio-bench-go/),
// and builds it there with "go build" (standard library only, no modules) whenever the
// source is newer than the binary.
//
// Usage (procs is GOMAXPROCS):
//
//	corio-peers yield    <procs> <n per goroutine> <warm-up n>
//	corio-peers spawn    <procs> <n>
//	corio-peers skynet   <procs> <leaves>
//	corio-peers fairness <procs> <hogs> <window ms>
//	corio-peers preemptcost <procs> <window ms>
//	corio-peers idle     <procs> <settle ms> <window ms>
//	corio-peers mutex    <procs> <lockers> <n lock+unlock in all> <warm-up n>
//	corio-peers chan     <procs> <pingpong|mpmc|sieve> <n> <warm-up n>
//	corio-peers httpserve <procs>
//	corio-peers echoserve <procs>
//
// The two servers listen on 127.0.0.1 (a port the kernel picks), print "@addr host:port" once
// they accept connections, and serve until they are killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func emit(key string, value interface{}) {
	// os.Stdout is unbuffered: each line reaches the parent at once.
	fmt.Printf("@%s %v\n", key, value)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "corio-peers: "+format+"\n", args...)
	os.Exit(2)
}

func intArg(i int, what string) int {
	if len(os.Args) <= i {
		fail("missing argument %d (%s)", i, what)
	}
	v, err := strconv.Atoi(os.Args[i])
	if err != nil || v < 0 {
		fail("bad %s: %q", what, os.Args[i])
	}
	return v
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: corio-peers <yield|spawn|skynet|fairness|preemptcost|idle|mutex|chan|httpserve|echoserve> <procs> <args..>")
	}
	runtime.GOMAXPROCS(intArg(2, "procs"))
	emit("gomaxprocs", runtime.GOMAXPROCS(0))
	emit("go_version", runtime.Version())
	switch os.Args[1] {
	case "yield":
		yieldMain(intArg(3, "n"), intArg(4, "warm-up n"))
	case "spawn":
		spawnMain(intArg(3, "n"))
	case "skynet":
		skynetMain(intArg(3, "leaves"))
	case "fairness":
		fairnessMain(intArg(3, "hogs"), time.Duration(intArg(4, "window ms"))*time.Millisecond)
	case "preemptcost":
		preemptCostMain(time.Duration(intArg(3, "window ms")) * time.Millisecond)
	case "idle":
		idleMain(time.Duration(intArg(3, "settle ms"))*time.Millisecond,
			time.Duration(intArg(4, "window ms"))*time.Millisecond)
	case "mutex":
		mutexMain(intArg(3, "lockers"), intArg(4, "n"), intArg(5, "warm-up n"))
	case "httpserve":
		httpServeMain()
	case "echoserve":
		echoServeMain()
	case "chan":
		if len(os.Args) < 4 {
			fail("missing argument 3 (pingpong|mpmc|sieve)")
		}
		chanMain(os.Args[3], intArg(4, "n"), intArg(5, "warm-up n"))
	default:
		fail("unknown subcommand %q", os.Args[1])
	}
}

// yield: two goroutines each call runtime.Gosched n times; the main goroutine waits for both
// (parked, not runnable). The time covers starting both and waiting for both.
func yieldRun(n int) time.Duration {
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	for g := 0; g < 2; g++ {
		go func() {
			for i := 0; i < n; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func yieldMain(n, warm int) {
	if warm > 0 {
		yieldRun(warm)
	}
	d := yieldRun(n)
	emit("ns_per_yield", float64(d.Nanoseconds())/float64(2*n))
}

// spawn: n goroutines with an empty body (wg.Done), all started, then all waited for. Two
// batches: the first on a fresh heap, the second on what the first left.
func spawnRun(n int) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { wg.Done() }()
	}
	wg.Wait()
	return time.Since(start)
}

func spawnMain(n int) {
	first := spawnRun(n)
	second := spawnRun(n)
	emit("ns_per_task", float64(first.Nanoseconds())/float64(n))
	emit("warm_ns_per_task", float64(second.Nanoseconds())/float64(n))
}

// skynet: the classic skynet.go (github.com/atemerev/skynet): every node starts `div`
// children and sums what they send on its channel.
func skynet(c chan int, num, size, div int) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int)
	sum := 0
	for i := 0; i < div; i++ {
		subNum := num + i*(size/div)
		go skynet(rc, subNum, size/div, div)
	}
	for i := 0; i < div; i++ {
		sum += <-rc
	}
	c <- sum
}

func skynetRun(leaves int) time.Duration {
	start := time.Now()
	c := make(chan int)
	go skynet(c, 0, leaves, 10)
	sum := <-c
	d := time.Since(start)
	want := leaves * (leaves - 1) / 2
	if sum != want {
		fail("skynet: sum %d, want %d", sum, want)
	}
	return d
}

func skynetMain(leaves int) {
	// Two runs in this process: the first on a fresh heap, the second on what the first left.
	cold := skynetRun(leaves)
	warm := skynetRun(leaves)
	emit("cold_ms", float64(cold.Nanoseconds())/1e6)
	emit("ms", float64(warm.Nanoseconds())/1e6)
}

// fairness: a sleeper sleeps 1 ms again and again and records how late each wake-up is, while
// `hogs` goroutines spin on an atomic flag. The sleeper starts (and finishes one sleep) before
// the hogs; every sleep that ends after the window began is recorded.
func fairnessMain(hogs int, window time.Duration) {
	var stop, recording int32
	samples := make([]int64, 0, 1<<16)
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		started := false
		for atomic.LoadInt32(&stop) == 0 {
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			late := time.Since(t0) - time.Millisecond
			if atomic.LoadInt32(&recording) != 0 {
				samples = append(samples, int64(late))
			}
			if !started {
				started = true
				close(first)
			}
		}
		close(done)
	}()
	<-first
	var hogsDone sync.WaitGroup
	hogsDone.Add(hogs)
	for i := 0; i < hogs; i++ {
		go func() {
			for atomic.LoadInt32(&stop) == 0 {
			}
			hogsDone.Done()
		}()
	}
	atomic.StoreInt32(&recording, 1)
	time.Sleep(window)
	atomic.StoreInt32(&stop, 1)
	hogsDone.Wait()
	<-done
	emitLateness(samples)
}

// preemptCost: two goroutines on one P spin reading the monotonic clock, each stamping its own
// word, and noting in a shared word which of them runs. When one finds the other noted there, it
// reads the clock again: the gap since the other's last stamp is one preemption — the signal's
// handling, asyncPreempt, the scheduler and the switch (the sending thread's work is not in
// it). Reports the gaps' count, p50 and p90 in µs (nearest rank).
func preemptCostMain(window time.Duration) {
	base := time.Now()
	var stop, running int64
	var stamps [3]int64
	gaps := [3][]int64{}
	var wg sync.WaitGroup
	wg.Add(2)
	for id := int64(1); id <= 2; id++ {
		go func(id int64) {
			other := 3 - id
			mine := make([]int64, 0, 1<<12)
			for atomic.LoadInt64(&stop) == 0 {
				now := int64(time.Since(base))
				if atomic.LoadInt64(&running) != id {
					now = int64(time.Since(base))
					if prev := atomic.LoadInt64(&stamps[other]); prev != 0 {
						mine = append(mine, now-prev)
					}
					atomic.StoreInt64(&running, id)
				}
				atomic.StoreInt64(&stamps[id], now)
			}
			gaps[id] = mine
			wg.Done()
		}(id)
	}
	time.Sleep(window)
	atomic.StoreInt64(&stop, 1)
	wg.Wait()
	emitGaps(append(gaps[1], gaps[2]...))
}

// emitGaps reports the count and the p50 and p90 of gaps (ns) in µs, nearest rank.
func emitGaps(samples []int64) {
	if rank := sortedRanks(samples); rank != nil {
		emit("p50_us", rank(50))
		emit("p90_us", rank(90))
	}
}

// sortedRanks reports the sample count, sorts the samples (ns) and returns their nearest-rank
// percentile in µs (as the Rust children compute it), or nil when there are none.
func sortedRanks(samples []int64) func(p int) float64 {
	emit("samples", len(samples))
	if len(samples) == 0 {
		return nil
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return func(p int) float64 {
		i := (len(samples)*p + 99) / 100
		if i < 1 {
			i = 1
		}
		return float64(samples[i-1]) / 1e3
	}
}

// emitLateness reports the sample count and the p50, p99 and max lateness in microseconds
// (nearest rank, as the Rust children compute it).
func emitLateness(samples []int64) {
	if rank := sortedRanks(samples); rank != nil {
		emit("p50_us", rank(50))
		emit("p99_us", rank(99))
		emit("max_us", float64(samples[len(samples)-1])/1e3)
	}
}

// idle: a Go program whose main goroutine is parked in time.Sleep on its own (locked) thread;
// the context switches of every other thread of the process over the window.
func idleMain(settle, window time.Duration) {
	runtime.LockOSThread()
	self := syscall.Gettid()
	// Use the scheduler once, as the Rust children do with their runtimes.
	ch := make(chan int)
	go func() { ch <- 1 }()
	<-ch
	time.Sleep(settle)
	before := threadSwitches(self)
	start := time.Now()
	time.Sleep(window)
	after := threadSwitches(self)
	elapsed := time.Since(start)
	var vol, nonvol int64
	for tid, a := range after {
		b := before[tid]
		vol += a[0] - b[0]
		nonvol += a[1] - b[1]
	}
	emit("switches_per_sec", float64(vol+nonvol)/elapsed.Seconds())
	emit("voluntary", vol)
	emit("nonvoluntary", nonvol)
	emit("threads", len(after)+1)
}

// threadSwitches reads voluntary and nonvoluntary context switches of every thread of this
// process except `skip`.
func threadSwitches(skip int) map[int][2]int64 {
	out := map[int][2]int64{}
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fail("reading /proc/self/task: %v", err)
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || tid == skip {
			continue
		}
		status, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		var v [2]int64
		for _, line := range strings.Split(string(status), "\n") {
			fields := strings.Fields(line)
			if len(fields) != 2 {
				continue
			}
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "voluntary_ctxt_switches:":
				v[0] = n
			case "nonvoluntary_ctxt_switches:":
				v[1] = n
			}
		}
		out[tid] = v
	}
	return out
}

// mutex: <lockers> goroutines each lock and unlock one sync.Mutex n/lockers times around a
// counter increment; the main goroutine waits for all. The time covers starting and waiting.
func mutexRun(lockers, n int) time.Duration {
	var mu sync.Mutex
	var wg sync.WaitGroup
	counter := 0
	per := n / lockers
	wg.Add(lockers)
	start := time.Now()
	for g := 0; g < lockers; g++ {
		go func() {
			for i := 0; i < per; i++ {
				mu.Lock()
				counter++
				mu.Unlock()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if counter != per*lockers {
		fail("mutex: counter %d, want %d", counter, per*lockers)
	}
	return d
}

func mutexMain(lockers, n, warm int) {
	if warm > 0 {
		mutexRun(lockers, warm)
	}
	d := mutexRun(lockers, n)
	emit("ns_per_lock", float64(d.Nanoseconds())/float64(n/lockers*lockers))
}

// chan pingpong: the main goroutine and an echo goroutine pass a value back and forth over two
// unbuffered channels, n round trips (2n hand-offs). Reports ns per hand-off.
func pingpongRun(n int) time.Duration {
	ping := make(chan int)
	pong := make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		ping <- i
		if <-pong != i+1 {
			fail("pingpong: wrong echo")
		}
	}
	d := time.Since(start)
	close(ping)
	return d
}

// chan mpmc: 4 producers send n values each into one channel of capacity 1024; 4 consumers
// receive until it is closed. Reports messages per second.
func mpmcRun(n int) time.Duration {
	c := make(chan int, 1024)
	var producers, consumers sync.WaitGroup
	var total int64
	start := time.Now()
	for p := 0; p < 4; p++ {
		producers.Add(1)
		go func() {
			for i := 0; i < n; i++ {
				c <- i
			}
			producers.Done()
		}()
	}
	for k := 0; k < 4; k++ {
		consumers.Add(1)
		go func() {
			var got int64
			for range c {
				got++
			}
			atomic.AddInt64(&total, got)
			consumers.Done()
		}()
	}
	producers.Wait()
	close(c)
	consumers.Wait()
	d := time.Since(start)
	if total != int64(4*n) {
		fail("mpmc: received %d of %d", total, 4*n)
	}
	return d
}

// chan sieve: the concurrent prime sieve of the Go tour, to the n-th prime. As in the
// original, the chain is never torn down: the process exits after the measurement.
func sieveGenerate(ch chan<- int) {
	for i := 2; ; i++ {
		ch <- i
	}
}

func sieveFilter(in <-chan int, out chan<- int, prime int) {
	for {
		i := <-in
		if i%prime != 0 {
			out <- i
		}
	}
}

func sieveRun(n int) (time.Duration, int) {
	start := time.Now()
	ch := make(chan int)
	go sieveGenerate(ch)
	prime := 0
	for i := 0; i < n; i++ {
		prime = <-ch
		if i == n-1 {
			break
		}
		ch1 := make(chan int)
		go sieveFilter(ch, ch1, prime)
		ch = ch1
	}
	return time.Since(start), prime
}

func chanMain(what string, n, warm int) {
	switch what {
	case "pingpong":
		if warm > 0 {
			pingpongRun(warm)
		}
		emit("value", float64(pingpongRun(n).Nanoseconds())/float64(2*n))
	case "mpmc":
		if warm > 0 {
			mpmcRun(warm)
		}
		emit("value", float64(4*n)/mpmcRun(n).Seconds())
	case "sieve":
		d, p := sieveRun(n)
		emit("prime", p)
		emit("value", float64(d.Nanoseconds())/1e6)
	default:
		fail("unknown chan benchmark %q", what)
	}
}

// listen opens the servers' listening socket and reports its address.
func listen() net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen: %v", err)
	}
	emit("addr", ln.Addr().String())
	return ln
}

// httpserve: net/http, keep-alive, GET /plaintext answers "Hello, World!" with
// Content-Length, Date (net/http adds it) and Server, as corio's http_hello does.
func httpServeMain() {
	ln := listen()
	mux := http.NewServeMux()
	mux.HandleFunc("/plaintext", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Server"] = []string{"go"}
		h["Content-Type"] = []string{"text/plain"}
		h["Content-Length"] = []string{"13"}
		w.Write([]byte("Hello, World!"))
	})
	fail("serve: %v", http.Serve(ln, mux))
}

// echoserve: one goroutine per connection writes back whatever it reads.
func echoServeMain() {
	ln := listen()
	for {
		c, err := ln.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		go func(c net.Conn) {
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}(c)
	}
}
