//! `svar2 read`: flags to the reader crate's region printer.

use std::path::Path;

pub fn run(
    store: &Path,
    region: &str,
    samples: Option<&str>,
    array: &str,
    format: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let st = svar2_reader::Store::open(store)?;
    let threads = svar2_planner::host::Host::system().cores().usable;
    let reader = svar2_reader::Reader::new(threads, 4)?;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match svar2_reader::region::write(&st, &reader, region, samples, array, format, &mut w) {
        // A reader that went away (`| head`) ends the output quietly.
        Err(svar2_reader::Error::Usage(m)) if m.contains("Broken pipe") => Ok(()),
        r => Ok(r?),
    }
}
