package taxii

import (
	"context"
	"fmt"
	"mime"
	"net/url"

	"github.com/tifeeds/tifeeds/ioc"
)

// discoveryResource is the TAXII 2.1 discovery resource.
type discoveryResource struct {
	Title    string   `json:"title"`
	Default  string   `json:"default"`
	APIRoots []string `json:"api_roots"`
}

// apiRootResource is the TAXII 2.1 API root resource.
type apiRootResource struct {
	Title    string   `json:"title"`
	Versions []string `json:"versions"`
}

// collectionResource is the TAXII 2.1 collection resource.
type collectionResource struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Alias    string `json:"alias"`
	CanRead  *bool  `json:"can_read"`
	CanWrite *bool  `json:"can_write"`
}

type collectionsResource struct {
	Collections []collectionResource `json:"collections"`
}

// ValidateCollectionURL checks a TAXII collection URL the way feed creation
// and editing need: the form <api_root>/collections/<collection_id>/, that
// the server's discovery (/taxii2/) lists the API root, that the API root
// speaks TAXII 2.1, that <collection_id> is the id (not the alias) of a
// collection in <api_root>/collections/, and that the collection's objects
// can be read with the client's credentials. Failures are ioc.FetchError:
// Invalid URL, Invalid collection URL, Invalid Credentials, Connection Error,
// or Fetching Data Error for a server fault.
func (c *Client) ValidateCollectionURL(ctx context.Context, collectionURL string) error {
	cu, err := ParseCollectionURL(collectionURL)
	if err != nil {
		return err
	}
	discovery := cu.discoveryURL()
	var d discoveryResource
	if err := c.getJSON(ctx, discovery, ioc.InvalidURL, ioc.InvalidURL, &d); err != nil {
		return err
	}
	listed := false
	base, _ := url.Parse(discovery)
	for _, r := range d.APIRoots {
		// api_roots are URLs; some servers list them relative to discovery.
		ref, err := url.Parse(r)
		if err != nil {
			continue
		}
		if sameRoot(base.ResolveReference(ref).String(), cu.APIRoot) {
			listed = true
			break
		}
	}
	if !listed {
		return ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: API root %s is not listed by the server's discovery at %s", cu.APIRoot, discovery))
	}

	var root apiRootResource
	if err := c.getJSON(ctx, cu.APIRoot, ioc.InvalidURL, ioc.InvalidURL, &root); err != nil {
		return err
	}
	if len(root.Versions) > 0 && !supports21(root.Versions) {
		return ioc.Fail(ioc.InvalidURL, fmt.Errorf("taxii: API root %s does not support TAXII 2.1 (versions %v)", cu.APIRoot, root.Versions))
	}

	var cols collectionsResource
	if err := c.getJSON(ctx, cu.collectionsURL(), ioc.InvalidURL, ioc.InvalidURL, &cols); err != nil {
		return err
	}
	var found *collectionResource
	for i, col := range cols.Collections {
		if col.ID == cu.ID {
			found = &cols.Collections[i]
			break
		}
	}
	if found == nil {
		for _, col := range cols.Collections {
			if col.Alias != "" && col.Alias == cu.ID {
				return ioc.Fail(ioc.InvalidCollectionURL, fmt.Errorf("taxii: %q is the alias of collection %s; use the collection id in the URL", cu.ID, col.ID))
			}
		}
		return ioc.Fail(ioc.InvalidCollectionURL, fmt.Errorf("taxii: API root %s has no collection with id %q", cu.APIRoot, cu.ID))
	}
	if found.CanRead != nil && !*found.CanRead {
		return ioc.Fail(ioc.InvalidCredentials, fmt.Errorf("taxii: collection %s is not readable with these credentials", cu.ID))
	}

	// can_read is the server's word; reading one object proves it.
	resp, err := c.get(ctx, cu.objectsURL()+"?limit=1", ioc.InvalidCollectionURL)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

func supports21(versions []string) bool {
	for _, v := range versions {
		mt, params, err := mime.ParseMediaType(v)
		if err == nil && mt == "application/taxii+json" && params["version"] == "2.1" {
			return true
		}
	}
	return false
}

// collection reads the collection resource, for its title and can_read.
func (c *Client) collection(ctx context.Context, cu CollectionURL) (collectionResource, error) {
	var col collectionResource
	if err := c.getJSON(ctx, cu.String(), ioc.InvalidCollectionURL, ioc.FetchingDataError, &col); err != nil {
		return col, err
	}
	if col.CanRead != nil && !*col.CanRead {
		return col, ioc.Fail(ioc.InvalidCredentials, fmt.Errorf("taxii: collection %s is not readable with these credentials", cu.ID))
	}
	return col, nil
}
