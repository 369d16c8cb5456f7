package s3

import (
	"net/http"
	"strings"

	"github.com/mure-dev/mure/internal/files"
)

// Keys and file paths (decision 0025). An object's key is its path under
// the bucket's folder, with one reversible mapping: a key ending in '/'
// (the zero-byte "folders" that consoles, s3fs and rclone make) is the
// file of that folder named folderMarker, which the native path rules
// accept. Every other key the path rules refuse is refused with
// InvalidObjectName, never rewritten.

// folderMarker is the file that holds the object of a key ending in '/':
// the key "a/b/" is the file "BUCKET/a/b/.s3folder".
const folderMarker = ".s3folder"

// pathOf is the file path of key in bucket.
func pathOf(bucket, key string) string {
	if strings.HasSuffix(key, "/") {
		return bucket + "/" + key + folderMarker
	}
	return bucket + "/" + key
}

// keyOf is the key of the file path under base ("BUCKET/"); hidden is
// set for the bucket's own files (its marker, the uploads folder, a
// folder marker at its top), which are no object.
func keyOf(base, path string) (key string, hidden bool) {
	k := strings.TrimPrefix(path, base)
	switch {
	case k == BucketMarker, k == folderMarker, strings.HasPrefix(k, uploadsDir+"/"):
		return k, true
	case strings.HasSuffix(k, "/"+folderMarker):
		return strings.TrimSuffix(k, folderMarker), false
	}
	return k, false
}

func (q *request) path() string { return pathOf(q.bucket, q.key) }

// validKey refuses, with an S3 error naming the rule, the keys of bucket
// that have no file path (decision 0025): nothing is rewritten but a
// trailing '/'. The path's limit of 1024 bytes counts the bucket's name.
func validKey(bucket, k string) error {
	refuse := func(format string, args ...any) error {
		return errorf(http.StatusBadRequest, CodeInvalidObjectName, format, args...)
	}
	last := k[strings.LastIndexByte(k, '/')+1:]
	switch {
	case k == "":
		return refuse("an empty key names no object")
	case k[0] == '/':
		return refuse("this store does not accept the key %q: keys starting with '/' are refused (they would make an empty segment)", k)
	case k == uploadsDir || strings.HasPrefix(k, uploadsDir+"/"):
		return refuse("keys under %q are reserved: they hold multipart uploads in progress", uploadsDir+"/")
	case k == BucketMarker:
		return refuse("the key %q is reserved: it marks an empty folder as a bucket", k)
	case last == folderMarker:
		return refuse("the name %q is reserved: the file %q holds the object of the key %q", folderMarker, k, strings.TrimSuffix(k, folderMarker))
	}
	if err := files.ValidatePath(pathOf(bucket, k)); err != nil {
		return refuse("this store does not accept the key %q: %s (a key may end in '/', but keys with \"//\", a '.' or '..' segment, backslashes or control characters are refused)", k, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "invalid path: "), bucket+"/"))
	}
	return nil
}
