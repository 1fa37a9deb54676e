package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// warmWindow is how much of a file warmFile asks the kernel about at once.
const warmWindow = 64 << 20

// idleIO gives the calling thread the idle I/O class, whose reads the
// kernel's scheduler (mq-deadline, bfq) serves when no other waits: the
// warm-up's then keep out of the way of the first requests' own. It
// reports whether the class was taken; the thread keeps it, so the caller
// must be on a thread that ends with it (background.OnOwnThread).
func idleIO() bool {
	const whoProcess, classIdle, classShift = 1, 3, 13
	_, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, whoProcess, 0, classIdle<<classShift)
	return errno == 0
}

// warmFile reads the pages of f that are not in the page cache and
// returns how many bytes it read; a nil f is nothing to read. It must not
// close f (see warmFiles).
func warmFile(ctx context.Context, f *os.File) (int64, error) {
	if f == nil {
		return 0, nil
	}
	buf := make([]byte, 1<<20)
	var read int64
	err := eachWindow(f, func(off, length, page int64, pages []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Each run of pages that are not resident, read at once.
		for i := 0; i < len(pages); {
			if pages[i]&1 != 0 {
				i++
				continue
			}
			j := i
			for j < len(pages) && pages[j]&1 == 0 && int64(j-i)*page < int64(len(buf)) {
				j++
			}
			began := time.Now()
			n, err := f.ReadAt(buf[:min(int64(j-i)*page, length-int64(i)*page)], off+int64(i)*page)
			read += int64(n)
			if err != nil {
				return err
			}
			// Half the disk's time at most: read at full speed beside the
			// first requests, even in the idle class, the warm-up made
			// their own cold reads slower (at 10,000,000 IoCs, first pages
			// of 118-175 ms that took 17 ms without it).
			time.Sleep(time.Since(began))
			i = j
		}
		return nil
	})
	if errors.Is(err, io.EOF) {
		return read, nil // the file shrank meanwhile (a checkpoint truncated the WAL)
	}
	return read, err
}

// eachWindow calls fn with each warmWindow of f from its start, its offset
// and length, the page size and which of its pages are in the page cache
// (bit 0 set), until fn fails.
func eachWindow(f *os.File, fn func(off, length, page int64, pages []byte) error) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	page := int64(os.Getpagesize())
	resident := make([]byte, warmWindow/page)
	for off := int64(0); off < fi.Size(); off += warmWindow {
		length := min(warmWindow, fi.Size()-off)
		pages, err := residentPages(int(f.Fd()), off, length, page, resident)
		if err != nil {
			return err
		}
		if err := fn(off, length, page, pages); err != nil {
			return err
		}
	}
	return nil
}

// residentPages fills pages with which of the file's pages from off for
// length are in the page cache (bit 0 set), by mincore(2) over a mapping.
func residentPages(fd int, off, length, page int64, pages []byte) ([]byte, error) {
	m, err := unix.Mmap(fd, off, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(m)
	pages = pages[:(length+page-1)/page]
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)),
		uintptr(unsafe.Pointer(&pages[0]))); errno != 0 {
		return nil, errno
	}
	return pages, nil
}

// memoryAvailable is MemAvailable of /proc/meminfo, in bytes (a variable
// for tests).
var memoryAvailable = procMemoryAvailable

func procMemoryAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable")
}
