package main

// Issue 17's TAXII walk: a TAXII 2.1 client reading every indicator of the
// store through /taxii2/ in pages of the largest limit, beside the STIX
// export of the same rows in one streamed bundle, in the same run.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/tifeeds/tifeeds/server/taxiisrv"
)

// taxiiGET fetches a TAXII resource as the admin and decodes it into out.
func (b *readBench) taxiiGET(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", b.url+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(benchAdmin, benchAdminKey)
	req.Header.Set("Accept", taxiisrv.MediaType)
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 500))
		return fmt.Errorf("GET %s: %d %s", path, res.StatusCode, msg)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// taxiiWalk pages the collection of all indicators along next and returns
// how many objects it read.
func (b *readBench) taxiiWalk(ctx context.Context) (int, error) {
	var cols struct{ Collections []struct{ ID, Title string } }
	if err := b.taxiiGET(ctx, taxiisrv.APIRootPath+"collections/", &cols); err != nil {
		return 0, err
	}
	var all string
	for _, c := range cols.Collections {
		if c.Title == "tifeeds: All indicators" {
			all = c.ID
		}
	}
	n, next := 0, ""
	for {
		q := url.Values{"limit": {fmt.Sprint(taxiisrv.MaxLimit)}}
		if next != "" {
			q.Set("next", next)
		}
		// The objects are decoded as a client would, each in full.
		var page struct {
			More    bool              `json:"more"`
			Next    string            `json:"next"`
			Objects []json.RawMessage `json:"objects"`
		}
		if err := b.taxiiGET(ctx, taxiisrv.APIRootPath+"collections/"+all+"/objects/?"+q.Encode(), &page); err != nil {
			return n, err
		}
		n += len(page.Objects)
		if !page.More {
			return n, nil
		}
		next = page.Next
	}
}

// taxii measures the walk against the STIX export: ratio = export time /
// walk time, target >= 0.25 (issue 17).
func (b *readBench) taxii(ctx context.Context) error {
	var s sideBySide
	var objects int
	var size int64
	for range b.runs {
		base, err := timed(func() (err error) {
			size, err = b.get(ctx, b.client, b.url, "/api/export/iocs.stix.json", nil)
			return err
		})
		if err != nil {
			return err
		}
		ours, err := timed(func() (err error) {
			objects, err = b.taxiiWalk(ctx)
			return err
		})
		if err != nil {
			return err
		}
		s.add(ours, base)
	}
	fmt.Printf("  TAXII walk %d objects %6.2f s vs STIX export %6.2f s (%.0f MB)   ratio %5.2f (target >= 0.25; each run: %s)\n",
		objects, median(s.ours), median(s.base), float64(size)/1e6, s.ratio(), s.each())
	return nil
}
