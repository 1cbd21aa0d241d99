//! Flag groups several subcommands share (the store layout, memory and threads, the
//! planning knobs) and the inputs-then-output path convention; each turns into the
//! library's options once, here.

use clap::Args;
use std::path::{Path, PathBuf};
use svar2_convert::planning::PlanRequest;
use svar2_planner::geometry::PatchShape;
use svar2_planner::size::{parse_max_mem, MaxMem};
use svar2_planner::{BudgetRequest, LayoutRequest, Requested};

/// The store layout: the same flags for `convert`, `plan` and `rechunk`.
#[derive(Args)]
pub struct LayoutArgs {
    /// The patch a reader fetches, VARIANTSxSAMPLES (e.g. 4096x1): inner chunks are
    /// sized so decoding a random patch costs at most --max-amplification.
    #[arg(long)]
    pub patch: Option<PatchShape>,
    /// Bytes decoded / bytes needed allowed for a --patch.
    #[arg(long, default_value_t = 1.5, value_parser = max_amplification_arg)]
    pub max_amplification: f64,
    /// Variants per inner chunk (overrides --patch; default 1000, bio2zarr's).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub variants_chunk: Option<u64>,
    /// Samples per inner chunk (overrides --patch; default 1000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub samples_chunk: Option<u64>,
    /// Variants per shard file, a multiple of the inner chunk (default: ~64 MiB of
    /// genotypes per shard).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub variants_shard: Option<u64>,
    /// Samples per shard file (default: all samples, up to ~64 MiB per shard).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub samples_shard: Option<u64>,
    /// Compression level of every inner chunk: the blosc clevel (1-9) of numeric
    /// chunks and the zstd level of string chunks. 1 writes ~1.45x faster than 3 for a
    /// store ~4% larger; decoding speed does not depend on the level.
    #[arg(long, default_value_t = 1, value_parser = zstd_level_arg)]
    pub zstd_level: i32,
}

/// `--zstd-level N`, by the planner's one rule.
fn zstd_level_arg(s: &str) -> Result<i32, String> {
    svar2_planner::request::zstd_level(s.parse().map_err(|e| format!("{e}"))?)
}

/// `--max-amplification X`, by the planner's one rule.
fn max_amplification_arg(s: &str) -> Result<f64, String> {
    svar2_planner::request::max_amplification(s.parse().map_err(|e| format!("{e}"))?)
}

impl LayoutArgs {
    /// Whether any layout flag was given (a partition takes its plan's layout).
    pub fn given(&self) -> bool {
        self.request().given()
    }

    /// The layout asked for, as convert, plan and rechunk take it.
    pub fn request(&self) -> LayoutRequest {
        LayoutRequest {
            patch: self.patch,
            max_amplification: self.max_amplification,
            requested: Requested {
                variants_chunk: self.variants_chunk,
                samples_chunk: self.samples_chunk,
                variants_shard: self.variants_shard,
                samples_shard: self.samples_shard,
            },
            zstd_level: self.zstd_level,
        }
    }
}

/// Memory and threads.
#[derive(Args)]
pub struct BudgetArgs {
    /// Memory budget: `auto` (0.8 x the cgroup limit, else host memory), or a size
    /// such as 8GiB, 512M, 1000000. Peak RSS is planned to stay under it; a
    /// conversion whose later records would take more stops before they do, naming
    /// the record and the --variants-chunk (or --max-mem) that fits.
    #[arg(long, default_value = "auto", value_parser = parse_max_mem)]
    pub max_mem: MaxMem,
    /// Encoding threads (default: every usable core, cgroup quota and affinity applied).
    /// Readers are threads of their own (a conversion's encoders run at nice +19, so a
    /// reader sharing their cores goes first); from 4, a streaming reader also gets a
    /// helper inflating BGZF blocks ahead of it.
    #[arg(long, value_parser = threads_arg)]
    pub threads: Option<usize>,
}

impl BudgetArgs {
    /// The budget asked for, as convert, plan and rechunk take it.
    pub fn request(&self) -> BudgetRequest {
        BudgetRequest {
            max_mem: self.max_mem,
            threads: self.threads,
        }
    }
}

/// `--threads N`: refused beyond what svar2 starts (a multiple of the usable cores),
/// not spawned for minutes.
pub fn threads_arg(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    svar2_planner::host::check_threads("--threads", n, false)
}

/// `--io-threads N`: refused beyond [`svar2_planner::host::MAX_IO_THREADS`].
pub fn io_threads_arg(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    svar2_planner::host::check_threads("--io-threads", n, true)
}

/// What `convert` and `plan` plan with: budget, layout and readers.
#[derive(Args)]
pub struct PlanningArgs {
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Readers per contig: each contig is cut into pieces read through the index in
    /// parallel (the bytes do not change). Default: as many as the rate probe finds
    /// keep the encoder busy, within the cores (one on 2 cores); one streaming reader
    /// without an index.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=svar2_planner::MAX_READERS as i64))]
    pub readers: Option<u32>,
    /// Convert an input cut short (a bgzipped VCF or BCF without the BGZF end-of-file
    /// block: an interrupted download) as far as it goes, with a warning; by default
    /// it is an error.
    #[arg(long)]
    pub allow_truncated: bool,
    #[command(flatten)]
    pub subset: SubsetArgs,
    /// The inputs are of different samples (each sorted; indexed inputs may list their
    /// contigs in any order, unindexed ones in one order): join them as `bcftools merge` does — the union of sites, absent samples as
    /// missing calls, INFO by bcftools' default rules, AC/AN counted again — into one
    /// store. `--merge` joins like `bcftools merge` (`-m both`: SNPs with SNPs, indels
    /// with indels); `--merge=none` like `-m none` (only records of the same alleles).
    /// A sample name in two inputs is refused; --force-samples keeps it as `2:NAME`.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "both")]
    pub merge: Option<svar2_vcf::merge::Collapse>,
}

/// `bcftools view`'s subsetting, applied while converting: the store is the one
/// converting `bcftools view --no-version` with the same flags would give.
/// The help heading of [`SubsetArgs`] (set per flag: a struct's heading would carry
/// over to the flags declared after it).
const SUBSETTING: &str = "Subsetting (bcftools view's flags)";

#[derive(Args)]
pub struct SubsetArgs {
    /// Keep only these samples, comma-separated, in that order (a leading ^ keeps all
    /// the others, in file order). INFO/AC and AN are recounted over the samples kept
    /// (and declared if the header lacks them), as bcftools view does, unless -I.
    #[arg(help_heading = SUBSETTING, short = 's', long)]
    samples: Option<String>,
    /// A file of sample names, one per line; ^FILE keeps all the others.
    #[arg(help_heading = SUBSETTING, short = 'S', long = "samples-file", conflicts_with = "samples")]
    samples_file: Option<PathBuf>,
    /// With -s/-S: skip names the header lacks (with a warning) instead of failing.
    /// With --merge: keep a sample name met in two inputs, the later one as `K:NAME`
    /// (K: the input's number), as bcftools merge does.
    #[arg(long, help_heading = SUBSETTING)]
    pub force_samples: bool,
    /// Keep records overlapping these regions (CHR, CHR:POS, CHR:BEG-END, CHR:BEG-;
    /// comma-separated; 1-based, inclusive), in the header's contig order.
    #[arg(help_heading = SUBSETTING, short = 'r', long)]
    regions: Option<String>,
    /// A regions file (CHR BEG END, tab-separated, 1-based inclusive; .bed: 0-based;
    /// plain, gzip or bgzip).
    #[arg(help_heading = SUBSETTING, short = 'R', long = "regions-file", conflicts_with = "regions")]
    regions_file: Option<PathBuf>,
    /// Keep records whose POS lies in these targets; a leading ^ drops them instead.
    #[arg(help_heading = SUBSETTING, short = 't', long)]
    targets: Option<String>,
    /// A targets file, as for -R; ^FILE drops them.
    #[arg(help_heading = SUBSETTING, short = 'T', long = "targets-file", conflicts_with = "targets")]
    targets_file: Option<PathBuf>,
    /// Keep only records for which the expression is true (bcftools' -i language,
    /// tested on every sample, before -s drops any): e.g. 'QUAL>30 && INFO/DP>10',
    /// 'MAF>0.01', 'COUNT(GT="alt")>2'.
    #[arg(
        help_heading = SUBSETTING,
        short = 'i',
        long = "include",
        conflicts_with = "exclude",
        allow_hyphen_values = true
    )]
    include: Option<String>,
    /// Drop the records for which the expression is true.
    #[arg(help_heading = SUBSETTING, short = 'e', long = "exclude", allow_hyphen_values = true)]
    exclude: Option<String>,
    /// With -s/-S: leave INFO/AC and AN as the input has them.
    #[arg(help_heading = SUBSETTING, short = 'I', long = "no-update")]
    no_update: bool,
}

impl SubsetArgs {
    /// The request the reader carries out.
    pub fn request(&self) -> svar2_vcf::subset::SubsetRequest {
        svar2_vcf::subset::SubsetRequest {
            samples: self.samples.clone(),
            sample_list: None,
            samples_file: self.samples_file.clone(),
            force_samples: self.force_samples,
            regions: self.regions.clone(),
            regions_file: self.regions_file.clone(),
            targets: self.targets.clone(),
            targets_file: self.targets_file.clone(),
            no_update: self.no_update,
            expression: match (&self.include, &self.exclude) {
                (Some(e), _) => Some((e.clone(), true)),
                (None, Some(e)) => Some((e.clone(), false)),
                (None, None) => None,
            },
        }
    }
}

impl PlanningArgs {
    /// The planner's request; `probe`: run the rate probe when it can help.
    pub fn request(&self, probe: bool) -> PlanRequest {
        PlanRequest {
            layout: self.layout.request(),
            budget: self.budget.request(),
            readers: self.readers,
            probe,
            allow_truncated: self.allow_truncated,
            subset: self.subset.request(),
            merge: self.merge.map(|collapse| svar2_vcf::merge::MergeRequest {
                collapse,
                force_samples: self.subset.force_samples,
            }),
        }
    }
}

/// A file argument (an input, a plan, a list, VCF out): refused when it is a URL,
/// never taken for a local folder called `s3:`.
pub fn local_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    refuse_any_url(&p)?;
    Ok(p)
}

/// A store argument: a local directory, a `.zip` file or an `s3://bucket/path` URL (other URL
/// schemes refused by name).
pub fn store_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    svar2_storage::refuse_url(&p).map_err(|e| e.to_string())?;
    Ok(p)
}

/// Refuses every URL, `s3://` too: only stores live in buckets.
fn refuse_any_url(p: &Path) -> Result<(), String> {
    if svar2_storage::bucket::is_bucket_url(p) {
        return Err(format!(
            "{}: s3:// URLs are for stores (convert's and rechunk's output, read, inspect, \
             view); VCF/BCF inputs, plans and lists are local files — copy it to a local \
             disk first",
            p.display()
        ));
    }
    svar2_storage::refuse_url(p).map_err(|e| e.to_string())
}

/// Whether a path is named like an input (`-`, .vcf, .vcf.gz, .bcf, .gz, .bgz).
fn input_like(p: &Path) -> bool {
    let n = p.to_string_lossy();
    n == "-"
        || [".vcf", ".gz", ".bcf", ".bgz"]
            .iter()
            .any(|e| n.ends_with(e))
}

/// The inputs and the output from the positional paths (and `--inputs FILE`, one
/// path per line). `needs_output`: the last path is the output (convert); otherwise
/// it is one only when not named like an input (plan).
pub fn split_paths(
    mut paths: Vec<PathBuf>,
    list: Option<&Path>,
    needs_output: bool,
) -> Result<(Vec<PathBuf>, Option<PathBuf>), String> {
    let output = match (needs_output, paths.last()) {
        (true, _) if paths.len() < 2 && list.is_none() => {
            return Err("give the inputs, then the output store (INPUT... OUTPUT)".into())
        }
        (true, _) => paths.pop(),
        (false, Some(last)) if list.is_some() || (paths.len() > 1 && !input_like(last)) => {
            paths.pop()
        }
        _ => None,
    };
    if let Some(list) = list {
        if !paths.is_empty() {
            return Err("with --inputs FILE, give only the output store".into());
        }
        let text = std::fs::read_to_string(list)
            .map_err(|e| format!("--inputs {}: {e}", list.display()))?;
        paths = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(PathBuf::from)
            .collect();
        if paths.is_empty() {
            return Err(format!("--inputs {}: lists no files", list.display()));
        }
        for p in &paths {
            refuse_any_url(p).map_err(|e| format!("--inputs {}: {e}", list.display()))?;
        }
    }
    for p in &paths {
        refuse_any_url(p)?;
    }
    Ok((paths, output))
}

/// Which records and samples `view` and `query` print: bcftools' -r/-R, -t/-T, -s/-S.
#[derive(Args)]
pub struct SelectionArgs {
    /// Regions: records overlapping them (CHR, CHR:POS, CHR:BEG-END, CHR:BEG-;
    /// comma-separated; 1-based, inclusive; 1.5k, 2e6 as htslib reads them), found
    /// through the region index.
    #[arg(short = 'r', long)]
    regions: Option<String>,
    /// A regions file (CHR BEG END, tab-separated, 1-based inclusive; .bed: 0-based;
    /// plain, gzip or bgzip).
    #[arg(short = 'R', long = "regions-file", conflicts_with = "regions")]
    #[arg(value_parser = crate::flags::local_path)]
    regions_file: Option<PathBuf>,
    /// Targets: records whose POS lies in them; a leading ^ excludes them.
    #[arg(short = 't', long)]
    targets: Option<String>,
    /// A targets file, as for -R; ^FILE excludes.
    #[arg(short = 'T', long = "targets-file", conflicts_with = "targets")]
    #[arg(value_parser = crate::flags::local_path)]
    targets_file: Option<PathBuf>,
    /// Samples, comma-separated, in that order; a leading ^ excludes them. view
    /// recounts INFO/AC and AN over them (-G too), as bcftools view does, unless -I.
    #[arg(short = 's', long)]
    samples: Option<String>,
    /// A file of sample names, one per line; ^FILE excludes them.
    #[arg(short = 'S', long = "samples-file", conflicts_with = "samples")]
    #[arg(value_parser = crate::flags::local_path)]
    samples_file: Option<PathBuf>,
    /// With -s/-S: pass over names the store lacks (with a warning) instead of failing.
    #[arg(long = "force-samples")]
    force_samples: bool,
}

/// [`SelectionArgs`] resolved against a store.
pub struct Selection {
    pub regions: Vec<svar2_view::select::Region>,
    pub targets: Option<svar2_view::select::Targets>,
    /// Store sample columns in output order (`None`: all).
    pub samples: Option<Vec<u64>>,
}

impl SelectionArgs {
    /// Reads the files and names the flags give, checked against `store`.
    pub fn resolve(&self, store: &svar2_reader::Store) -> svar2_view::Result<Selection> {
        use svar2_view::select::{sample_columns, Targets};
        let regions = svar2_vcf::region::regions_from_flags(
            self.regions.as_deref(),
            self.regions_file.as_deref(),
        )?
        .unwrap_or_default();
        let targets = Targets::from_flags(self.targets.as_deref(), self.targets_file.as_deref())?;
        let samples = sample_columns(
            store,
            self.samples.as_deref(),
            self.samples_file.as_deref(),
            self.force_samples,
        )?;
        Ok(Selection {
            regions,
            targets,
            samples,
        })
    }
}

/// bcftools' -i/-e: records (and, in `query`, samples) chosen by an expression.
#[derive(Args)]
pub struct FilterArgs {
    /// Print only records for which the expression is true, bcftools' language:
    /// e.g. 'QUAL>30 && INFO/DP>10', 'GT="het"', 'FMT/GQ>20 & FMT/DP>10' (one sample
    /// both), 'MAF<0.01', 'COUNT(GT="alt")>2'. In query, samples that fail a FORMAT
    /// test are left out of [ ].
    #[arg(
        short = 'i',
        long = "include",
        conflicts_with = "exclude",
        allow_hyphen_values = true
    )]
    include: Option<String>,
    /// Print only records for which the expression is false (in query, an excluded
    /// record's samples that fail it are still printed, as bcftools does).
    #[arg(short = 'e', long = "exclude", allow_hyphen_values = true)]
    exclude: Option<String>,
}

impl FilterArgs {
    /// The expression and whether it includes or excludes.
    pub fn resolve(&self) -> Option<(String, svar2_expr::Logic)> {
        match (&self.include, &self.exclude) {
            (Some(e), _) => Some((e.clone(), svar2_expr::Logic::Include)),
            (None, Some(e)) => Some((e.clone(), svar2_expr::Logic::Exclude)),
            (None, None) => None,
        }
    }
}
