// Command zip writes a zip archive that is the same bytes for the same files: entries in
// the order given, each dated SOURCE_DATE_EPOCH (else 1980-01-01), an executable's mode kept.
// scripts/dist.sh uses it for the Windows archives, so that no zip program is needed.
//
//	go run ./scripts/zip OUT.zip NAME=FILE...
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "zip:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: zip OUT.zip NAME=FILE...")
	}
	date := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		date = time.Unix(sec, 0).UTC()
	}
	out, err := os.Create(args[0])
	if err != nil {
		return err
	}
	w := zip.NewWriter(out)
	for _, arg := range args[1:] {
		name, file, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want NAME=FILE", arg)
		}
		if err := add(w, name, file, date); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return out.Close()
}

func add(w *zip.Writer, name, file string, date time.Time) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: date}
	h.SetMode(st.Mode().Perm())
	dst, err := w.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, f)
	return err
}
