//! `svar2 view`: VCF or BCF of a store's records, with bcftools view's flags.

use std::path::PathBuf;
use svar2_vcf::write::OutputType;

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path (any VCF Zarr store).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// Print help (-h is --header-only, as in bcftools).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    selection: crate::flags::SelectionArgs,
    #[command(flatten)]
    filter: crate::flags::FilterArgs,
    /// No genotypes: drop FORMAT and the sample columns.
    #[arg(short = 'G', long = "drop-genotypes")]
    drop_genotypes: bool,
    /// Print the header only.
    #[arg(short = 'h', long = "header-only")]
    header_only: bool,
    /// Print no header (VCF text).
    #[arg(short = 'H', long = "no-header")]
    no_header: bool,
    /// Output type: v (VCF), z (bgzipped VCF), b (BCF), u (uncompressed BCF); default
    /// from -o's extension (.vcf.gz, .bcf), else v.
    #[arg(short = 'O', long = "output-type", value_parser = OutputType::parse)]
    output_type: Option<OutputType>,
    /// Output file (default: standard output).
    #[arg(short = 'o', long)]
    #[arg(value_parser = crate::flags::local_path)]
    output: Option<PathBuf>,
    /// Write a CSI index beside -o (VCF.gz or BCF).
    #[arg(long)]
    write_index: bool,
    /// Set INFO tags from the printed samples' genotypes, as bcftools +fill-tags does
    /// (after -s): a comma-separated list of AC, AN, AF, MAF, NS, AC_Het, AC_Hom,
    /// AC_Hemi, F_MISSING.
    #[arg(long = "fill-tags", value_name = "LIST")]
    fill_tags: Option<String>,
    /// Keep INFO/AC and INFO/AN as stored when -s/-S subsets the samples (by default
    /// they are recomputed for the samples printed, as bcftools does).
    #[arg(short = 'I', long = "no-update")]
    no_update: bool,
    /// Threads reading, decoding and formatting records, and compressing -Oz/-Ob
    /// output (default: every usable core, cgroup quota and affinity applied).
    #[arg(long, value_parser = crate::flags::threads_arg)]
    threads: Option<usize>,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = svar2_reader::Store::open_with(&a.store, svar2_reader::store::Access::Stream)?;
    let threads = a
        .threads
        .unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let selection = a.selection.resolve(&store)?;
    let kind = a.output_type.unwrap_or_else(|| {
        let name = a
            .output
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".gz") || name.ends_with(".bgz") {
            OutputType::VcfGz
        } else if name.ends_with(".bcf") {
            OutputType::Bcf
        } else {
            OutputType::Vcf
        }
    });
    let o = svar2_view::ViewOptions {
        regions: selection.regions,
        targets: selection.targets,
        samples: selection.samples,
        genotypes: !a.drop_genotypes,
        header_only: a.header_only,
        no_header: a.no_header,
        output: a.output,
        kind,
        write_index: a.write_index,
        threads,
        update_info: !a.no_update,
        filter: a.filter.resolve(),
        fill_tags: match &a.fill_tags {
            Some(list) => svar2_view::fill::parse(list)?,
            None => Vec::new(),
        },
        kept_format: None,
    };
    match svar2_view::view(&store, &reader, &o) {
        Err(e) if e.is_broken_pipe() => Ok(()),
        r => Ok(r.map(|_| ())?),
    }
}
