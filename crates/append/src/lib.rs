//! `svar2 append STORE NEW...`: new samples into an existing store, as a new version
//! swapped in whole. The store's records are printed as BCF (`svar2 view`, which
//! converts back to the same bytes), joined with the new inputs as `bcftools merge`
//! joins them (`convert --merge`), and converted with the store's layout beside it;
//! then one `renameat2(RENAME_EXCHANGE)` puts the new version where the old one was.
//! So the result is the store converting `bcftools merge` of the old and new inputs
//! gives, whatever the sites: a reader opening the store sees the old version or the
//! new one, never a mixture; `kill -9` at any point leaves one of the two whole (the
//! staging folder beside it is cleared by the next append); a second append at the
//! same time is refused (the store directory's lock).
//!
//! The cost grows with the store, not with the samples added: every shard is
//! written again. (Writing only the new samples' shard columns needs the same sites
//! and the same widths in every field — a later change.)

mod carry;
mod same_sites;
mod swap;

use std::path::{Path, PathBuf};
use std::time::Instant;
use svar2_planner::geometry::Requested;
use svar2_planner::request::{BudgetRequest, LayoutRequest};
use svar2_vcf::merge::MergeRequest;

/// What can stop an append: the store (unreadable, of a kind append cannot grow, in
/// use), the export of its records, the conversion, or the swap.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Reader(#[from] svar2_reader::Error),
    #[error(transparent)]
    View(#[from] svar2_view::Error),
    #[error(transparent)]
    Convert(#[from] svar2_convert::Error),
    /// Reading the store's chunks (a damaged one is named).
    #[error(transparent)]
    Store(#[from] svar2_store::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The store cannot be appended to as asked (named, with what to do).
    #[error("{0}")]
    Request(String),
    /// The store's records could not be joined with the inputs (the message names the
    /// store and the record).
    #[error("{0}")]
    Records(String),
    /// Another append (or a conversion) holds the store.
    #[error("{0}")]
    Busy(String),
}

pub type Result<T> = std::result::Result<T, Error>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.into(),
        source,
    }
}

/// How to append.
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// How records at one position are joined (`bcftools merge -m`), and whether a
    /// sample name already in the store is kept as `K:NAME` (`--force-samples`).
    pub merge: MergeRequest,
    /// Memory and threads for the conversion of the new version.
    pub budget: BudgetRequest,
    pub progress: bool,
}

/// What an append did.
#[derive(Debug, Clone, Default)]
pub struct Appended {
    pub records: u64,
    pub samples_before: u64,
    pub samples_after: u64,
    pub seconds: f64,
    /// Bytes the new version holds.
    pub store_bytes: u64,
    /// Bytes written: the whole store, or (when the new samples had the store's
    /// sites) the sample columns from `first_sample_written` on and the arrays on the
    /// variants axis, the earlier columns' files being the old version's, linked.
    pub bytes_written: u64,
    /// The first sample whose columns were written (0: the whole store).
    pub first_sample_written: u64,
}

/// The staging folder beside `store`: the old records as BCF, the new version while
/// it is written, and after the swap the old version until it is removed.
pub fn staging_of(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push(".svar2-append");
    store.with_file_name(name)
}

/// Written first into a staging folder svar2 makes: only a folder holding it is one
/// svar2 may clear (a folder of that name the user made, or filled, is left alone).
const MARKER: &str = ".svar2-append";
const EXPORT: &str = "old.bcf";
const EXPORT_INDEX: &str = "old.bcf.csi";
const NEW: &str = "new.zarr";

/// Appends the samples of `inputs` (VCF/BCF, each sorted, samples not in the store)
/// to the directory store `store`.
pub fn append(store: &Path, inputs: &[PathBuf], o: &AppendOptions) -> Result<Appended> {
    let t0 = Instant::now();
    let store = &svar2_store::replace::without_trailing_slash(store);
    check_kind(store, inputs)?;
    // Named by its own path (`.`, `a/..` name no folder the staging folder can sit
    // beside), after the link check above looked at the path as given.
    let store = &std::fs::canonicalize(store).map_err(io(store))?;
    let _lock = lock(store)?;
    let staging = staging_of(store);
    for input in inputs {
        svar2_store::replace::refuse_overlap(input, &staging, "input file")
            .map_err(|e| Error::Request(e.to_string()))?;
    }
    check_writable(store)?;
    carry::refuse_foreign_nodes(store)?;
    clear_staging(&staging)?;
    std::fs::create_dir(&staging).map_err(io(&staging))?;
    std::fs::write(staging.join(MARKER), "svar2 append staging\n").map_err(io(&staging))?;
    // A failure leaves the old store as it was: the staging folder goes.
    let result = write_new_version(store, &staging, inputs, o);
    let version = match result {
        Ok(v) => v,
        Err(e) => {
            let _ = clear_staging(&staging);
            return Err(e);
        }
    };
    let new = staging.join(NEW);
    if let Err(e) = carry::carry_attributes(store, &new) {
        let _ = clear_staging(&staging);
        return Err(e);
    }
    // The new version locked before it takes the store's path: a second append that
    // opens the path after the swap finds it locked until the leftovers are cleared
    // (the old directory's lock stays with the old version).
    let _new_lock = match lock(&new) {
        Ok(l) => l,
        Err(e) => {
            let _ = clear_staging(&staging);
            return Err(e);
        }
    };
    // Checked again just before the swap: what was added to the store while the new
    // version was written would go with the old version, which is removed.
    if let Err(e) = svar2_store::dir::check_only_store(store) {
        let _ = clear_staging(&staging);
        return Err(Error::Request(format!(
            "{e} (added while the append ran: the store is left as it was)"
        )));
    }
    if let Err(e) = carry::refuse_dropped_nodes(store, &new) {
        let _ = clear_staging(&staging);
        return Err(e);
    }
    swap::exchange(store, &new).map_err(io(store))?;
    // `new` now holds the old version: svar2's to remove, as the store it replaced.
    // The append is done whatever happens to the leftovers (the next one clears them).
    if let Err(e) = clear_staging(&staging) {
        tracing::warn!("the new version is in place, but its leftovers stay: {e}");
    }
    let store_bytes = tree_bytes(store, false);
    Ok(Appended {
        records: version.records,
        samples_before: version.samples_before,
        samples_after: version.samples_after,
        seconds: t0.elapsed().as_secs_f64(),
        store_bytes,
        bytes_written: version.bytes_written,
        first_sample_written: version.first_sample_written,
    })
}

/// Refuses stores append cannot grow in place, and inputs inside the store.
fn check_kind(store: &Path, inputs: &[PathBuf]) -> Result<()> {
    // The store's records are an input too, and inputs are opened more than once (their
    // headers, then the merge): standard input would be read once.
    if inputs.iter().any(|p| svar2_vcf::inputs::is_stdin(p)) {
        return Err(Error::Request(
            "`-` (standard input): append opens its inputs more than once; write the \
             records to a file first (e.g. `bcftools view -Ob -o new.bcf`, or \
             `bgzip > new.vcf.gz`) and append that"
                .into(),
        ));
    }
    if svar2_storage::bucket::is_bucket_url(store) {
        return Err(Error::Request(format!(
            "{}: append grows a directory store (a bucket store's new version would need \
             every key written again under the old one's readers): convert --merge the \
             inputs into a new prefix instead",
            store.display()
        )));
    }
    if svar2_storage::zip::is_zip_file(store) {
        return Err(Error::Request(format!(
            "{}: a zip store is written once and whole: append to a directory store (svar2 \
             rechunk it into one), or convert --merge into a new .zip",
            store.display()
        )));
    }
    let meta = std::fs::symlink_metadata(store).map_err(|e| {
        Error::Request(format!(
            "{}: {e}: append grows an existing store (svar2 convert makes one)",
            store.display()
        ))
    })?;
    if meta.file_type().is_symlink() {
        return Err(Error::Request(format!(
            "{}: a symbolic link; append swaps the store's directory, so give the path it \
             points to",
            store.display()
        )));
    }
    if !store.join("zarr.json").is_file() {
        if store.join(".zgroup").is_file() {
            return Err(Error::Request(format!(
                "{}: a Zarr v2 store (bio2zarr's `vcf2zarr` writes v2 by default); append \
                 grows v3 stores: `svar2 rechunk` it into a v3 store first",
                store.display()
            )));
        }
        return Err(Error::Request(format!(
            "{}: not a complete Zarr store (no root zarr.json)",
            store.display()
        )));
    }
    // The old version is removed once swapped out: nothing of the user's may be in it.
    svar2_store::dir::check_only_store(store).map_err(|e| Error::Request(e.to_string()))?;
    if inputs.is_empty() {
        return Err(Error::Request("append: no input files".into()));
    }
    if inputs.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(Error::Request(
            "append: an input path is empty (''): name a VCF or BCF file".into(),
        ));
    }
    for input in inputs {
        svar2_store::replace::refuse_overlap(input, store, "input file")
            .map_err(|e| Error::Request(e.to_string()))?;
    }
    Ok(())
}

/// Refuses a store whose directory (or the one holding it) this process cannot write:
/// the swap needs both, and would fail only after the whole new version was written.
fn check_writable(store: &Path) -> Result<()> {
    let parent = store.parent().unwrap_or(Path::new("/"));
    for dir in [store, parent] {
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: a NUL-terminated path alive for the call.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
            return Err(Error::Request(format!(
                "{}: not writable by this user; append swaps the store's directory for a \
                 new version written beside it, which needs write permission on the store's \
                 directory and the one holding it",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Holds the store directory's lock (the one a conversion writing it holds), so a
/// second append, or a conversion replacing it, is refused while this one runs.
fn lock(store: &Path) -> Result<std::fs::File> {
    let f = std::fs::File::open(store).map_err(io(store))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Busy(format!(
            "{}: another svar2 process is appending to it or writing it: wait for it to end",
            store.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Io {
            path: store.into(),
            source: e,
        }),
    }
}

/// Removes a staging folder left by this or an earlier append (killed before it
/// cleared it): only the entries an append makes there; anything else is refused.
fn clear_staging(staging: &Path) -> Result<()> {
    let not_ours = |what: &str| {
        Error::Request(format!(
            "{}: {what}, not a staging folder svar2 made (append writes one there): move \
             it away",
            staging.display()
        ))
    };
    match std::fs::symlink_metadata(staging) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(staging)(e)),
        Ok(m) if m.file_type().is_symlink() => return Err(not_ours("a symbolic link")),
        Ok(m) if !m.is_dir() => return Err(not_ours("a file")),
        Ok(_) => {}
    }
    let entries = std::fs::read_dir(staging).map_err(io(staging))?;
    let entries: Vec<_> = entries
        .collect::<std::io::Result<_>>()
        .map_err(io(staging))?;
    // Killed between making the folder and marking it: empty, and removed as such.
    if let Some(first) = entries.first().filter(|_| !staging.join(MARKER).is_file()) {
        return Err(not_ours(&format!(
            "a folder holding {} without svar2's marker",
            first.file_name().to_string_lossy()
        )));
    }
    let ours = [
        MARKER,
        EXPORT,
        EXPORT_INDEX,
        NEW,
        same_sites::TAIL,
        same_sites::TAIL_INDEX,
    ];
    for entry in entries {
        let name = entry.file_name();
        if !ours.iter().any(|o| name == *o) {
            return Err(Error::Request(format!(
                "{}: holds {} which svar2 did not put there; remove the folder yourself if \
                 it is not needed",
                staging.display(),
                name.to_string_lossy()
            )));
        }
    }
    match std::fs::remove_dir_all(staging) {
        // (An append that just swapped may be clearing it at the same moment.)
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(staging)(e)),
        _ => Ok(()),
    }
}

/// Writes the new version into `staging/new.zarr`: by the same-sites path when it
/// applies, else the store's records exported whole, merged with the new inputs and
/// converted with the store's layout.
fn write_new_version(
    store: &Path,
    staging: &Path,
    inputs: &[PathBuf],
    o: &AppendOptions,
) -> Result<Version> {
    let opened = svar2_reader::Store::open_with(store, svar2_reader::store::Access::Stream)?;
    let old = same_sites::Checked {
        path: store,
        opened: &opened,
        chunk_sums: opened.group().check_shards_in_place()?,
    };
    let before = opened.sample_names().len() as u64;
    let threads = o
        .budget
        .threads
        .unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
    let new = staging.join(NEW);
    if let Some(w) = same_sites::try_write(old, staging, &new, inputs, o, threads)? {
        return Ok(Version {
            records: w.records,
            samples_before: before,
            samples_after: w.samples_after,
            bytes_written: w.bytes_written,
            first_sample_written: w.first_sample,
        });
    }
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let export = staging.join(EXPORT);
    tracing::info!("{}: its records into {}", store.display(), export.display());
    self::export(&opened, &reader, &export, None, None, threads)?;
    let options = convert_options(&opened, before, o, None);
    drop(opened);
    let mut all = vec![export.clone()];
    all.extend(inputs.iter().cloned());
    let summary = svar2_convert::convert_inputs(&all, &new, &options)
        .map_err(|e| name_store(e, &export, store))?;
    let after = svar2_reader::Store::open_with(&new, svar2_reader::store::Access::Stream)?
        .sample_names()
        .len() as u64;
    Ok(Version {
        records: summary.records,
        samples_before: before,
        samples_after: after,
        bytes_written: summary.store_bytes,
        first_sample_written: 0,
    })
}

/// What writing the new version did.
struct Version {
    records: u64,
    samples_before: u64,
    samples_after: u64,
    bytes_written: u64,
    first_sample_written: u64,
}

/// Prints the store's records (of the sample columns `samples`, all when `None`) as
/// compressed, indexed BCF at `path`, so the merge reads it contig by contig in
/// bcftools' order like any indexed input (uncompressed BCF is ~17x the store).
fn export(
    opened: &svar2_reader::Store,
    reader: &svar2_reader::Reader,
    path: &Path,
    samples: Option<Vec<u64>>,
    kept_format: Option<std::sync::Arc<svar2_view::KeptFormat>>,
    threads: usize,
) -> Result<()> {
    svar2_view::view(
        opened,
        reader,
        &svar2_view::ViewOptions {
            regions: Vec::new(),
            targets: None,
            samples,
            genotypes: true,
            header_only: false,
            no_header: false,
            output: Some(path.to_path_buf()),
            kind: svar2_vcf::write::OutputType::BcfFast,
            write_index: true,
            threads,
            // (AC/AN are counted again by the merge; a subset's would add their header
            // lines, and so their arrays, to a store without them.)
            update_info: false,
            filter: None,
            fill_tags: Vec::new(),
            kept_format,
        },
    )?;
    Ok(())
}

/// The conversion of the new version: the store's layout (`geometry` when it is
/// kept exactly), merged as asked.
fn convert_options(
    opened: &svar2_reader::Store,
    before: u64,
    o: &AppendOptions,
    geometry: Option<svar2_store::grid::Geometry>,
) -> svar2_convert::Options {
    let mut layout = layout_of(opened, before);
    if let Some(g) = geometry {
        layout.requested = Requested {
            variants_chunk: Some(g.variants_chunk),
            samples_chunk: Some(g.samples_chunk),
            variants_shard: Some(g.variants_shard),
            samples_shard: Some(g.samples_shard),
        };
        layout.zstd_level = g.zstd_level;
    }
    svar2_convert::Options {
        request: svar2_convert::planning::PlanRequest {
            layout,
            budget: o.budget,
            readers: None,
            probe: false,
            allow_truncated: false,
            subset: Default::default(),
            merge: Some(o.merge),
        },
        force: false,
        progress: o.progress,
        contig_order: Default::default(),
    }
}

/// A message about the store's exported records names the export: name the store.
fn name_store(e: svar2_convert::Error, export: &Path, store: &Path) -> Error {
    let export = export.display().to_string();
    match e.to_string() {
        m if m.contains(&export) => {
            Error::Records(m.replace(&export, &store.display().to_string()))
        }
        _ => Error::Convert(e),
    }
}

/// The layout the new version is written with: the store's own (svar2 records it),
/// except a samples chunk or shard the old sample count clamped (equal to it), which
/// is what the user asked for when svar2 recorded that, else chosen again by the
/// planner for the new count. A store of another tool gets
/// svar2's default layout.
fn layout_of(store: &svar2_reader::Store, samples: u64) -> LayoutRequest {
    let recorded = store
        .group()
        .attributes
        .get("svar2")
        .and_then(|s| s.get("layout"))
        .cloned();
    let Some(l) = recorded else {
        tracing::warn!(
            "the store was not written by svar2 (no layout recorded): the new version has \
             svar2's default layout"
        );
        return LayoutRequest::default();
    };
    let get = |k: &str| l.get(k).and_then(serde_json::Value::as_u64);
    // What the user asked for when the sample count clamped it (svar2 records it),
    // else the layout's size unless it is the sample count.
    let asked = store
        .group()
        .attributes
        .get("svar2")
        .and_then(|s| s.get("requested"))
        .cloned();
    let sample_axis = |k: &str| match asked.as_ref() {
        Some(a) => a.get(k).and_then(serde_json::Value::as_u64),
        None => get(k).filter(|&v| v != samples),
    };
    LayoutRequest {
        requested: Requested {
            variants_chunk: get("variants_chunk"),
            samples_chunk: sample_axis("samples_chunk"),
            variants_shard: get("variants_shard"),
            samples_shard: sample_axis("samples_shard"),
        },
        zstd_level: l
            .get("zstd_level")
            .and_then(serde_json::Value::as_i64)
            .map_or(1, |z| z as i32),
        ..LayoutRequest::default()
    }
}

/// Bytes of the files under `dir`; with `unlinked_only`, of those no other path links
/// (what an append wrote, the old version's files being linked).
fn tree_bytes(dir: &Path, unlinked_only: bool) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) if !unlinked_only || m.nlink() == 1 => total += m.len(),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock a second append meets holds across the swap: the old directory's
    /// lock goes with the old version, so the new one is locked before it takes the
    /// store's path (main locked only the old one: a second append started during the
    /// first's cleanup, and both cleared the same staging folder).
    #[test]
    fn the_store_path_stays_locked_across_the_swap() {
        let dir = std::env::temp_dir().join(format!("svar2-lock-{}", std::process::id()));
        let (store, new) = (dir.join("store.zarr"), dir.join("new.zarr"));
        std::fs::create_dir_all(&store).unwrap();
        std::fs::create_dir_all(&new).unwrap();
        let _old_lock = lock(&store).unwrap();
        let _new_lock = lock(&new).unwrap();
        swap::exchange(&store, &new).unwrap();
        assert!(matches!(lock(&store), Err(Error::Busy(_))));
        assert!(matches!(lock(&new), Err(Error::Busy(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
