//! `svar2 read`: a region's genotypes (or any numeric array) as `bcftools query`
//! prints them, or as one `.npy` array.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path (any VCF Zarr store).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// CONTIG, CONTIG:POS, CONTIG:START-END or CONTIG:START- (1-based, inclusive; records
    /// overlapping it, as `bcftools view -r`).
    #[arg(long)]
    region: String,
    /// Samples to print, comma-separated (default: all, in store order).
    #[arg(long)]
    samples: Option<String>,
    /// The array to read.
    #[arg(long, default_value = "call_genotype")]
    array: String,
    /// tsv: CHROM, POS, then one column per sample (GT rebuilt from
    /// call_genotype and call_genotype_phased; other arrays' values comma-joined).
    /// npy: the selected rows x samples x trailing values as one .npy array.
    #[arg(long, default_value = "tsv", value_parser = ["tsv", "npy"])]
    format: String,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let st = svar2_reader::Store::open(&a.store)?;
    let threads = svar2_planner::host::Host::system().cores().usable;
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let r = svar2_reader::region::write(
        &st,
        &reader,
        &a.region,
        a.samples.as_deref(),
        &a.array,
        &a.format,
        &mut w,
    );
    match r {
        // A reader that went away (`| head`) ends the output quietly.
        Err(e) if e.is_broken_pipe() => Ok(()),
        r => Ok(r?),
    }
}
