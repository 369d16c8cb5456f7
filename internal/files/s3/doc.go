// Package s3 is the S3 face of the file service: an S3 API on a node's own
// listener (mure serve --s3 ADDR) whose buckets are the top-level folders
// of the one namespace, so an object put over S3 is a file for the native
// API and the reverse. Requests authenticate with SigV4 (headers or
// presigned URLs) using the access keys of the security model (decision
// 0015); every call goes to the file API with forwarding, so any node
// answers any request (decisions 0011, 0021). Errors are S3's XML with
// S3's codes.
package s3
