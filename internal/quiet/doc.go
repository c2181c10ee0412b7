// Package quiet reads and writes non-blocking pipes and sockets without waking the Go
// runtime's monitor thread: toolsift's stdin and stdout, and the benchmarks' client's ends
// of them, where a request and its answer are two system calls each side.
package quiet
