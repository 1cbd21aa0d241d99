//! `svar2 query`: `bcftools query -f` formats over a store's records.

use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The store: a directory, a .zip file or s3://bucket/path (any VCF Zarr store).
    #[arg(value_parser = crate::flags::store_path)]
    store: PathBuf,
    /// The format, as bcftools query takes it: %CHROM %POS %POS0 %ID %REF %ALT
    /// %FIRST_ALT %QUAL %FILTER %TYPE %INFO %INFO/TAG %TAG %END %END0 %LINE, [ … ] per sample with %SAMPLE %GT
    /// %TGT %TAG; %ALT{N} %TAG{N}: a list's N-th value (0-based); \t \n.
    #[arg(short = 'f', long, required_unless_present = "list_samples")]
    format: Option<String>,
    /// Print the sample names and exit.
    #[arg(short = 'l', long = "list-samples")]
    list_samples: bool,
    /// Print a header line naming the columns.
    #[arg(short = 'H', long = "print-header")]
    print_header: bool,
    #[command(flatten)]
    selection: crate::flags::SelectionArgs,
    #[command(flatten)]
    filter: crate::flags::FilterArgs,
    /// Threads reading, decoding and formatting records (default: every usable core,
    /// cgroup quota and affinity applied).
    #[arg(long, value_parser = crate::flags::threads_arg)]
    threads: Option<usize>,
}

pub fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let store = svar2_reader::Store::open_with(&a.store, svar2_reader::store::Access::Stream)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let selection = a.selection.resolve(&store)?;
    let columns = selection.samples;
    if a.list_samples {
        let names = store.sample_names();
        let cols: Vec<u64> = columns.unwrap_or_else(|| (0..names.len() as u64).collect());
        let mut text = String::new();
        for c in cols {
            let name = &names[c as usize];
            // One line a name: one holding a line break would list two.
            if name.contains(['\n', '\r']) {
                return Err(format!(
                    "{}: sample {name:?} holds a line break: the store's sample_id is \
                     damaged (restore it from a copy or convert again)",
                    a.store.display()
                )
                .into());
            }
            text += name;
            text.push('\n');
        }
        crate::output::out(&text);
        return Ok(());
    }
    let threads = a
        .threads
        .unwrap_or_else(|| svar2_planner::host::Host::system().cores().usable);
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let o = svar2_view::QueryOptions {
        format: a.format.expect("clap requires -f without -l"),
        regions: selection.regions,
        targets: selection.targets,
        samples: columns,
        header: a.print_header,
        filter: a.filter.resolve(),
    };
    match svar2_view::query(&store, &reader, &o, &mut out) {
        Err(e) if e.is_broken_pipe() => Ok(()),
        Err(e) => Err(e.into()),
        Ok(_) => match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => Ok(r?),
        },
    }
}
