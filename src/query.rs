//! `svar2 query`: `bcftools query -f` formats over a store's records.

use std::io::Write;
use std::path::PathBuf;
use svar2_view::select::{parse_regions, read_regions_file, sample_columns, Targets};

#[derive(clap::Args)]
pub struct Args {
    /// The store (any VCF Zarr store).
    store: PathBuf,
    /// The format, as bcftools query takes it: %CHROM %POS %ID %REF %ALT %QUAL
    /// %FILTER %INFO %INFO/TAG %TAG %END %LINE, [ … ] per sample with %SAMPLE %GT
    /// %TGT %TAG; \t \n.
    #[arg(short = 'f', long, required_unless_present = "list_samples")]
    format: Option<String>,
    /// Print the sample names and exit.
    #[arg(short = 'l', long = "list-samples")]
    list_samples: bool,
    /// Print a header line naming the columns.
    #[arg(short = 'H', long = "print-header")]
    print_header: bool,
    /// Regions (records overlapping them), as for view.
    #[arg(short = 'r', long)]
    regions: Option<String>,
    /// A regions file.
    #[arg(short = 'R', long = "regions-file", conflicts_with = "regions")]
    regions_file: Option<PathBuf>,
    /// Targets (records whose POS lies in them; ^ excludes).
    #[arg(short = 't', long)]
    targets: Option<String>,
    /// Samples, comma-separated, in that order (^ excludes).
    #[arg(short = 's', long)]
    samples: Option<String>,
    /// A file of sample names (^FILE excludes).
    #[arg(short = 'S', long = "samples-file", conflicts_with = "samples")]
    samples_file: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = svar2_reader::Store::open(&a.store)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let columns = sample_columns(&store, a.samples.as_deref(), a.samples_file.as_deref())?;
    if a.list_samples {
        let names = store.sample_names();
        let cols: Vec<u64> = columns.unwrap_or_else(|| (0..names.len() as u64).collect());
        let mut text = String::new();
        for c in cols {
            text += &names[c as usize];
            text.push('\n');
        }
        crate::output::out(&text);
        return Ok(());
    }
    let threads = svar2_planner::host::Host::system().cores().usable;
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let regions = match (&a.regions, &a.regions_file) {
        (Some(l), _) => parse_regions(l)?,
        (None, Some(f)) => read_regions_file(f)?,
        (None, None) => Vec::new(),
    };
    let o = svar2_view::QueryOptions {
        format: a.format.expect("clap requires -f without -l"),
        regions,
        targets: a.targets.as_deref().map(Targets::parse).transpose()?,
        samples: columns,
        header: a.print_header,
    };
    match svar2_view::query(&store, &reader, &o, &mut out) {
        Err(e) if e.to_string().contains("Broken pipe") => Ok(()),
        Err(e) => Err(e.into()),
        Ok(_) => match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => Ok(r?),
        },
    }
}
