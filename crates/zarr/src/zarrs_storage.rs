//! zarrs' view of a [`Storage`]: the arrays zarrs decodes whole (strings, other
//! writers' shards) read through svar2's storage, so a bucket or a zip store reads
//! the same way as a directory.

use std::sync::Arc;
use svar2_storage::Error;
use svar2_storage::Storage;

/// zarrs' view of a [`Storage`], for the arrays zarrs decodes whole (strings, other
/// writers' shards): keys as zarrs spells them, reads by range.
#[derive(Debug)]
pub struct ZarrsStorage(pub Arc<dyn Storage>);

fn zarrs_err(e: Error) -> zarrs::storage::StorageError {
    zarrs::storage::StorageError::Other(e.to_string())
}

impl zarrs::storage::ReadableStorageTraits for ZarrsStorage {
    fn get_partial_many<'a>(
        &'a self,
        key: &zarrs::storage::StoreKey,
        byte_ranges: zarrs::storage::byte_range::ByteRangeIterator<'a>,
    ) -> std::result::Result<zarrs::storage::MaybeBytesIterator<'a>, zarrs::storage::StorageError>
    {
        use zarrs::storage::byte_range::ByteRange;
        let k = key.as_str().to_string();
        let ranges: Vec<ByteRange> = byte_ranges.collect();
        // A whole object is one GET; ranges of it are cut from it when zarrs asks
        // for many (a shard index and its chunks), else read one by one.
        let whole = match ranges.as_slice() {
            [ByteRange::FromStart(0, None)] => true,
            _ => ranges.len() > 1,
        };
        if whole {
            let Some(b) = self.0.get(&k).map_err(zarrs_err)? else {
                return Ok(None);
            };
            let size = b.len() as u64;
            let b = zarrs::storage::Bytes::from(b);
            let out: Vec<std::result::Result<zarrs::storage::Bytes, _>> = ranges
                .iter()
                .map(|r| {
                    let range = r.to_range_usize(size);
                    if range.end > b.len() {
                        return Err(zarrs::storage::StorageError::Other(format!(
                            "{k}: range {range:?} past the object's end ({size} bytes)"
                        )));
                    }
                    Ok(b.slice(range))
                })
                .collect();
            return Ok(Some(Box::new(out.into_iter())));
        }
        let mut out = Vec::with_capacity(ranges.len());
        for r in &ranges {
            let got = match *r {
                ByteRange::Suffix(n) => self.0.get_tail(&k, n).map_err(zarrs_err)?.map(|x| x.0),
                ByteRange::FromStart(at, Some(len)) => {
                    if self.size(&k)?.is_none() {
                        return Ok(None);
                    }
                    Some(self.0.get_range(&k, at, len).map_err(zarrs_err)?)
                }
                ByteRange::FromStart(at, None) => self
                    .0
                    .get(&k)
                    .map_err(zarrs_err)?
                    .map(|b| b[(at as usize).min(b.len())..].to_vec()),
            };
            match got {
                Some(b) => out.push(Ok(zarrs::storage::Bytes::from(b))),
                None => return Ok(None),
            }
        }
        Ok(Some(Box::new(out.into_iter())))
    }

    fn size_key(
        &self,
        key: &zarrs::storage::StoreKey,
    ) -> std::result::Result<Option<u64>, zarrs::storage::StorageError> {
        self.size(key.as_str())
    }

    fn supports_get_partial(&self) -> bool {
        true
    }
}

impl ZarrsStorage {
    fn size(&self, key: &str) -> std::result::Result<Option<u64>, zarrs::storage::StorageError> {
        self.0.size(key).map_err(zarrs_err)
    }
}
