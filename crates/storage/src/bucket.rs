//! A store in an S3 bucket (AWS, or any S3-compatible server: MinIO, Ceph, …),
//! through the `object_store` crate behind a blocking facade: svar2's readers and
//! writers are threads, not tasks, so each call blocks its own thread on one shared
//! runtime — the reader's many IO threads are many requests in flight.
//!
//! Credentials and endpoint come the standard way: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`
//! (S3-compatible servers; a plain `http://` one only with `AWS_ALLOW_HTTP=true`), or
//! the `~/.aws/credentials` and `~/.aws/config` profile named by `AWS_PROFILE`. No
//! secret is ever formatted into a message: errors name the object's URL and the
//! server's answer only.

use crate::error::{Error, Result};
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    RetryConfig, WriteMultipart,
};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Objects above this size are uploaded in parts of [`PART_BYTES`].
const SINGLE_PUT_MAX: u64 = 16 << 20;
/// One multipart part (S3's minimum is 5 MiB).
pub const PART_BYTES: usize = 8 << 20;
/// Parts of one object in flight at once: an upload holds at most this many parts.
pub const PARTS_IN_FLIGHT: usize = 2;

/// Requests made and bytes fetched by this process (the benchmarks' GET count and
/// bytes fetched against bytes needed).
static GETS: AtomicU64 = AtomicU64::new(0);
static FETCHED: AtomicU64 = AtomicU64::new(0);

/// `(GET requests, bytes fetched)` so far.
pub fn fetch_stats() -> (u64, u64) {
    (
        GETS.load(Ordering::Relaxed),
        FETCHED.load(Ordering::Relaxed),
    )
}

fn count(bytes: usize) {
    GETS.fetch_add(1, Ordering::Relaxed);
    FETCHED.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// `s3://bucket/prefix` split into bucket and key prefix (no slashes at either end);
/// `None` when `path` is not an `s3://` URL. [`Bucket::open`] refuses a prefix with
/// `.`, `..` or empty segments.
pub fn parse(path: &Path) -> Option<(String, String)> {
    let s = path.to_str()?;
    let rest = s.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    Some((bucket.to_string(), prefix.trim_matches('/').to_string()))
}

/// Whether `path` is a URL svar2 reads and writes (`s3://`).
pub fn is_bucket_url(path: &Path) -> bool {
    parse(path).is_some()
}

/// The runtime every blocking call runs on (two workers drive the connections; the
/// futures themselves run on the calling threads).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("svar2-s3")
            .enable_all()
            .build()
            .expect("a tokio runtime (threads and an epoll instance)")
    })
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// A store's place in a bucket (cloned cheaply: one client shared).
#[derive(Clone)]
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    bucket: String,
    prefix: String,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // (Never the client: its configuration holds the credentials.)
        write!(f, "Bucket({})", self.url(""))
    }
}

/// `key = value` pairs of one `[section]` of an AWS INI file.
fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') && line.ends_with(']') {
            inside = line[1..line.len() - 1].trim() == section;
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
    }
    out
}

/// Settings from `~/.aws/credentials` and `~/.aws/config` for `AWS_PROFILE` (or
/// `default`) that the environment does not already give.
fn profile_settings() -> Vec<(AmazonS3ConfigKey, String)> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let file = |var: &str, name: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let mut out = Vec::new();
    let unset = |var: &str| std::env::var_os(var).is_none();
    if unset("AWS_ACCESS_KEY_ID") {
        if let Some(text) = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
            .and_then(|p| std::fs::read_to_string(p).ok())
        {
            for (k, v) in ini_section(&text, &profile) {
                let key = match k.as_str() {
                    "aws_access_key_id" => AmazonS3ConfigKey::AccessKeyId,
                    "aws_secret_access_key" => AmazonS3ConfigKey::SecretAccessKey,
                    "aws_session_token" => AmazonS3ConfigKey::Token,
                    _ => continue,
                };
                out.push((key, v));
            }
        }
    }
    if let Some(text) =
        file("AWS_CONFIG_FILE", "config").and_then(|p| std::fs::read_to_string(p).ok())
    {
        let section = if profile == "default" {
            "default".to_string()
        } else {
            format!("profile {profile}")
        };
        for (k, v) in ini_section(&text, &section) {
            let key = match k.as_str() {
                "region" if unset("AWS_REGION") && unset("AWS_DEFAULT_REGION") => {
                    AmazonS3ConfigKey::Region
                }
                "endpoint_url" if unset("AWS_ENDPOINT_URL") && unset("AWS_ENDPOINT") => {
                    AmazonS3ConfigKey::Endpoint
                }
                _ => continue,
            };
            out.push((key, v));
        }
    }
    out
}

/// One line for an `object_store` error: its message and its causes', without
/// repeats (the causes carry the server's answer or the connection failure).
fn describe(e: &object_store::Error) -> String {
    redact_userinfo(&describe_raw(e))
}

/// `text` with the userinfo of every URL in it (`http://user:password@host`)
/// replaced by `***`: an `AWS_ENDPOINT_URL` may carry a password, and the client's
/// errors print the endpoint.
pub fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the path, query, fragment or the end of the word.
        let end = tail
            .find(|c: char| "/?#".contains(c) || c.is_whitespace() || "\"'<>()".contains(c))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(i) => {
                out.push_str("***@");
                out.push_str(&authority[i + 1..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// [`describe`] before redaction.
fn describe_raw(e: &object_store::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    let text = parts.join(": ").replace('\n', " ");
    let hint = if text.contains("scheme is not allowed") {
        " (a plain http:// endpoint: set AWS_ALLOW_HTTP=true to allow it)"
    } else if [
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "403 Forbidden",
    ]
    .iter()
    .any(|t| text.contains(t))
    {
        " (check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
    } else if text.contains("NoSuchBucket") {
        " (no such bucket: create it first, or check the name)"
    } else if text.contains("onnect") || text.contains("error sending request") {
        " (cannot reach the server: check AWS_ENDPOINT_URL and the network)"
    } else {
        ""
    };
    format!("{text}{hint}")
}

impl Bucket {
    /// The bucket store at `url` (`s3://bucket/prefix`), with the environment's (or
    /// the AWS profile's) credentials, region and endpoint.
    pub fn open(url: &Path) -> Result<Bucket> {
        let (bucket, prefix) = parse(url).ok_or_else(|| Error::Bucket {
            url: url.display().to_string(),
            msg: "not an s3://bucket/path URL".into(),
        })?;
        let shown = redact_userinfo(&url.display().to_string());
        if bucket.is_empty() {
            return Err(Error::Bucket {
                url: shown,
                msg: "no bucket name (s3://bucket/path)".into(),
            });
        }
        if bucket.contains(['@', ':']) {
            return Err(Error::Bucket {
                url: shown,
                msg: "a bucket name has no user, password or port (s3://bucket/path; the \
                      endpoint and credentials come from AWS_ENDPOINT_URL and AWS_*)"
                    .into(),
            });
        }
        check_key(&prefix).map_err(|msg| Error::Bucket { url: shown, msg })?;
        let mut b = AmazonS3Builder::from_env().with_bucket_name(&bucket);
        for (k, v) in profile_settings() {
            b = b.with_config(k, v);
        }
        // A server that stops answering fails the command within seconds, not after
        // object_store's default three minutes of retries.
        b = b.with_retry(RetryConfig {
            max_retries: 4,
            retry_timeout: Duration::from_secs(20),
            ..RetryConfig::default()
        });
        let store = b.build().map_err(|e| Error::Bucket {
            url: url.display().to_string(),
            msg: describe(&e),
        })?;
        Ok(Bucket {
            store: Arc::new(store),
            bucket,
            prefix,
        })
    }

    /// The URL of `key` under the store (`s3://bucket/prefix/key`), as messages name it.
    pub fn url(&self, key: &str) -> String {
        let mut u = format!("s3://{}", self.bucket);
        for p in [self.prefix.as_str(), key] {
            if !p.is_empty() {
                u.push('/');
                u.push_str(p);
            }
        }
        u
    }

    /// The object's key in the bucket, byte for byte (a `%` stays a `%`, as other
    /// S3 clients name it, so a listed key reads back); a key with a `.`, `..` or
    /// empty segment or a control character is refused, never escaped into another
    /// key.
    fn path(&self, key: &str) -> Result<ObjectPath> {
        let key = key.trim_matches('/');
        let full = match (self.prefix.is_empty(), key.is_empty()) {
            (true, _) => key.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{key}", self.prefix),
        };
        check_key(&full).map_err(|msg| Error::Bucket {
            url: self.url(key),
            msg,
        })?;
        ObjectPath::parse(&full).map_err(|e| Error::Bucket {
            url: self.url(key),
            msg: format!("not a valid object key: {e}"),
        })
    }

    /// Whether the bucket itself exists: `Err` naming it when the server says it
    /// does not (or cannot be reached), so a missing bucket is not reported as a
    /// missing store.
    pub fn check_bucket(&self) -> Result<()> {
        match block_on(self.store.list_with_delimiter(None)) {
            Ok(_) => Ok(()),
            Err(e) => {
                let text = describe(&e);
                let msg = if text.contains("NoSuchBucket")
                    || matches!(e, object_store::Error::NotFound { .. })
                {
                    format!(
                        "the bucket {:?} does not exist (create it first, or check the name \
                         and AWS_ENDPOINT_URL)",
                        self.bucket
                    )
                } else {
                    format!("cannot list the bucket {:?}: {text}", self.bucket)
                };
                Err(Error::Bucket {
                    url: format!("s3://{}", self.bucket),
                    msg,
                })
            }
        }
    }

    fn err(&self, key: &str, e: &object_store::Error) -> Error {
        Error::Bucket {
            url: self.url(key),
            msg: describe(e),
        }
    }

    /// The whole object at `key` (`None`: there is none).
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(key)?;
        let r = block_on(async {
            let got = self.store.get(&path).await?;
            got.bytes().await
        });
        match r {
            Ok(b) => {
                count(b.len());
                Ok(Some(b.to_vec()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, &e)),
        }
    }

    /// `len` bytes at `at` of the object at `key` (one ranged GET); fewer bytes than
    /// asked (the object is shorter than its index says) is an error.
    pub fn get_range(&self, key: &str, at: u64, len: u64) -> Result<Vec<u8>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let b = block_on(self.store.get_range(&self.path(key)?, at..at + len))
            .map_err(|e| self.err(key, &e))?;
        count(b.len());
        if b.len() as u64 != len {
            return Err(Error::Corrupt {
                key: self.url(key),
                msg: format!(
                    "{} bytes at {at} asked, {} came back (a truncated object)",
                    len,
                    b.len()
                ),
            });
        }
        Ok(b.to_vec())
    }

    /// The last `n` bytes of the object at `key` and its size, in one GET (a
    /// shard's index); `None`: there is no such object.
    pub fn get_tail(&self, key: &str, n: u64) -> Result<Option<(Vec<u8>, u64)>> {
        let opts = GetOptions {
            range: Some(GetRange::Suffix(n)),
            ..GetOptions::default()
        };
        let path = self.path(key)?;
        let r = block_on(async {
            let got = self.store.get_opts(&path, opts).await?;
            let size = got.meta.size;
            Ok::<_, object_store::Error>((got.bytes().await?, size))
        });
        match r {
            Ok((b, size)) => {
                count(b.len());
                Ok(Some((b.to_vec(), size)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, &e)),
        }
    }

    /// The size of the object at `key` (one HEAD; `None`: there is none).
    pub fn size(&self, key: &str) -> Result<Option<u64>> {
        match block_on(self.store.head(&self.path(key)?)) {
            Ok(m) => Ok(Some(m.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, &e)),
        }
    }

    /// Every object under `under` (`""`: the whole store), as keys relative to the
    /// store with their sizes, sorted.
    pub fn list(&self, under: &str) -> Result<Vec<(String, u64)>> {
        let base = self.path(under)?;
        let strip = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.prefix)
        };
        let prefix = (!base.as_ref().is_empty()).then_some(&base);
        let all: Vec<object_store::Result<object_store::ObjectMeta>> =
            block_on(self.store.list(prefix).collect());
        let mut out = Vec::with_capacity(all.len());
        for m in all {
            let m = m.map_err(|e| self.err(under, &e))?;
            let k = m.location.as_ref();
            out.push((k.strip_prefix(&strip).unwrap_or(k).to_string(), m.size));
        }
        out.sort();
        Ok(out)
    }

    /// Writes `bytes` to `key` (one PUT).
    pub fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        block_on(self.store.put(&self.path(key)?, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| self.err(key, &e))
    }

    /// Writes `bytes` to `key` only if no object is there (a conditional PUT,
    /// `If-None-Match: *`): `false` when one already was.
    pub fn put_if_absent(&self, key: &str, bytes: Vec<u8>) -> Result<bool> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match block_on(
            self.store
                .put_opts(&self.path(key)?, PutPayload::from(bytes), opts),
        ) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(self.err(key, &e)),
        }
    }

    /// Uploads the file at `file` to `key`: one PUT when small, else a multipart
    /// upload of [`PART_BYTES`] parts with at most [`PARTS_IN_FLIGHT`] in memory (an
    /// upload that fails is aborted, so no part is left behind).
    pub fn put_file(&self, key: &str, file: &Path) -> Result<()> {
        let io = |e| Error::io(file, e);
        let len = std::fs::metadata(file).map_err(io)?.len();
        if len <= SINGLE_PUT_MAX {
            return self.put(key, std::fs::read(file).map_err(io)?);
        }
        let mut f = std::fs::File::open(file).map_err(io)?;
        let path = self.path(key)?;
        block_on(async {
            let upload = self
                .store
                .put_multipart(&path)
                .await
                .map_err(|e| self.err(key, &e))?;
            let mut w = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
            let mut buf = vec![0u8; PART_BYTES];
            loop {
                let n = match f.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        let _ = w.abort().await;
                        return Err(io(e));
                    }
                };
                if let Err(e) = w.wait_for_capacity(PARTS_IN_FLIGHT).await {
                    let _ = w.abort().await;
                    return Err(self.err(key, &e));
                }
                w.write(&buf[..n]);
            }
            w.finish().await.map(|_| ()).map_err(|e| self.err(key, &e))
        })
    }

    /// Downloads the object at `key` into `file` (created with its directory),
    /// streamed: memory stays at one network buffer whatever the object's size.
    pub fn get_file(&self, key: &str, file: &Path) -> Result<u64> {
        use std::io::Write;
        let io = |e| Error::io(file, e);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let path = self.path(key)?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(file).map_err(io)?);
        let n = block_on(async {
            let got = self.store.get(&path).await.map_err(|e| self.err(key, &e))?;
            let mut stream = got.into_stream();
            let mut n = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| self.err(key, &e))?;
                count(chunk.len());
                n += chunk.len() as u64;
                out.write_all(&chunk).map_err(io)?;
            }
            Ok::<u64, Error>(n)
        })?;
        out.flush().map_err(io)?;
        Ok(n)
    }

    /// Downloads `keys` into `root` (each to `root/<key>`), [`TRANSFER_THREADS`] at
    /// a time.
    pub fn get_files(&self, keys: &[String], root: &Path) -> Result<()> {
        in_parallel(keys, |key| self.get_file(key, &root.join(key)).map(|_| ()))
    }

    /// Uploads `keys` from `root` (each from `root/<key>`), [`TRANSFER_THREADS`] at a
    /// time, each whole or by multipart parts ([`put_file`](Self::put_file)).
    pub fn put_files(&self, root: &Path, keys: &[String]) -> Result<()> {
        in_parallel(keys, |key| self.put_file(key, &root.join(key)))
    }

    /// Deletes the object at `key` (absent is not an error).
    pub fn delete(&self, key: &str) -> Result<()> {
        match block_on(self.store.delete(&self.path(key)?)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(key, &e)),
        }
    }

    /// Deletes every object of the store (before a conversion starts it again).
    pub fn delete_all(&self) -> Result<()> {
        self.delete_under("")
    }

    /// Deletes every object under `under` (a partition's leftovers, the work of a
    /// finished partitioned conversion).
    pub fn delete_under(&self, under: &str) -> Result<()> {
        let mut paths: Vec<object_store::Result<ObjectPath>> = Vec::new();
        for (k, _) in self.list(under)? {
            paths.push(Ok(self.path(&k)?));
        }
        let paths = futures::stream::iter(paths).boxed();
        let results: Vec<object_store::Result<ObjectPath>> =
            block_on(self.store.delete_stream(paths).collect());
        for r in results {
            match r {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.err("", &e)),
            }
        }
        Ok(())
    }
}

/// Refuses a key (or key prefix) with a `.`, `..` or empty segment: S3 would store
/// it under a key no other path names (`base.zarr/..` is not the parent), and a
/// later `view` or `convert --force` of the store would not see it.
fn check_key(key: &str) -> std::result::Result<(), String> {
    if key.is_empty() {
        return Ok(());
    }
    match key
        .split('/')
        .find(|s| s.is_empty() || *s == "." || *s == "..")
    {
        None => Ok(()),
        Some(seg) => Err(format!(
            "{} path segment in the key {key:?}: give the store's path without \
             '.', '..' or '//' (S3 keys are not resolved like directories)",
            if seg.is_empty() {
                "an empty".to_string()
            } else {
                format!("a {seg:?}")
            }
        )),
    }
}

/// Transfers in flight at once in [`Bucket::get_files`] and [`Bucket::put_files`]:
/// each holds at most one small object or [`PARTS_IN_FLIGHT`] parts in memory.
pub const TRANSFER_THREADS: usize = 8;

/// Runs `f` on every item from [`TRANSFER_THREADS`] threads; the first error stops
/// the rest from starting new items and is returned.
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..TRANSFER_THREADS.min(items.len()) {
            scope.spawn(|| loop {
                if failed.lock().expect("transfer error").is_some() {
                    return;
                }
                let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                if let Err(e) = f(item) {
                    failed.lock().expect("transfer error").get_or_insert(e);
                    return;
                }
            });
        }
    });
    match failed.into_inner().expect("transfer error") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_bucket_and_prefix() {
        let p = |s: &str| parse(Path::new(s));
        assert_eq!(p("s3://b/x/y.zarr/"), Some(("b".into(), "x/y.zarr".into())));
        assert_eq!(p("s3://b"), Some(("b".into(), String::new())));
        assert_eq!(p("/tmp/s3://b"), None);
        assert_eq!(p("gs://b/x"), None);
    }

    #[test]
    fn userinfo_is_redacted() {
        let r = redact_userinfo(
            "error sending request for url (http://me:pa55@127.0.0.1:9000/b/k?x=1): refused; \
             https://h/x http://u@h",
        );
        assert_eq!(
            r,
            "error sending request for url (http://***@127.0.0.1:9000/b/k?x=1): refused; \
             https://h/x http://***@h"
        );
        assert!(!r.contains("pa55"));
    }

    #[test]
    fn dot_segments_are_refused() {
        for k in ["a/..", "../a", "a/./b", "a//b", "."] {
            assert!(check_key(k).is_err(), "{k}");
        }
        for k in ["", "a/b.zarr", "a%2E/b", "x..y"] {
            assert!(check_key(k).is_ok(), "{k}");
        }
    }

    #[test]
    fn profiles_are_read_by_section() {
        let text = "[default]\naws_access_key_id = A\n[other]\naws_access_key_id=B\n";
        assert_eq!(
            ini_section(text, "other"),
            vec![("aws_access_key_id".into(), "B".into())]
        );
        assert_eq!(ini_section(text, "default")[0].1, "A");
    }
}
