//! The FOCUS export of a period (`GET /v1/finops/gpu/allocation/focus`, `eai-gpu export focus`): the allocation
//! with its day (or hour) items, scoped to the caller, as `eai_engine::focus` rows, encoded as CSV or Parquet
//! with the columns of a FOCUS version (1.3 by default, or 1.2).
//!
//! Parquet: one row group, no compression (the crate is built without codecs). Money columns are DECIMAL(38, 4)
//! (every ISO 4217 minor unit fits), GPU-hours DECIMAL(38, 9), the `x_` quantities DECIMAL(38, 6), all exact
//! (FIXED_LEN_BYTE_ARRAY(16), as pandas/pyarrow, DuckDB and Spark load them: decimal, never float); date-times
//! are TIMESTAMP(MILLIS, UTC); text is UTF-8 (1.3's JSON columns too); `x_Unallocated` is BOOLEAN. Nullable
//! columns are OPTIONAL.

use std::sync::Arc;

use eai_engine::allocate::{AllocationConfig, Period, Span};
use eai_engine::error::FieldError;
use eai_engine::focus::{self, Invoices, Issuer, Kind, Row, Value, Version};
use eai_engine::scope::scoped_to;
use eai_store::{Scope, StatementStore, StoreError, TenantStore};
use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, FixedLenByteArray, FixedLenByteArrayType, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use rust_decimal::Decimal;

use crate::allocation::{compute_from, AllocationStore, Source};
use crate::statements::tenant_names;

/// An encoding of the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
}

impl Format {
    /// `csv` (the default) or `parquet`.
    pub fn parse(s: Option<&str>) -> Result<Format, FieldError> {
        match s.map(str::trim) {
            None | Some("csv") => Ok(Format::Csv),
            Some("parquet") => Ok(Format::Parquet),
            Some(other) => Err(FieldError::new(
                "format",
                format!("must be `csv` or `parquet`, not `{other}`"),
            )),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }
}

/// What an export asks for.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub period: Period,
    pub config: AllocationConfig,
    pub scope: Scope,
    /// A row per UTC day or hour.
    pub granularity: Span,
    pub issuer: &'a Issuer,
}

/// The FOCUS rows of the period as the scope may see them: a platform scope gets every tenant's rows and the
/// rows of unallocated cost; a tenant its own rows only (none of them split: the origin charge, a shared
/// deployment's total, is withheld from it). A row's `InvoiceId` is the number of the statement issued for its
/// tenant and month (the platform's statement of unallocated capacity for the idle rows), null until then.
pub async fn rows(
    source: &Source,
    store: &(impl AllocationStore + TenantStore + StatementStore + ?Sized),
    req: &Request<'_>,
) -> Result<Vec<Row>, StoreError> {
    let config = AllocationConfig {
        day_items: true,
        item_span: req.granularity,
        ..req.config
    };
    let allocation = compute_from(source, store, req.period, config).await?;
    let allocation = match req.scope {
        Scope::Platform => allocation,
        Scope::Tenant(t) => scoped_to(&allocation, t),
    };
    let names = tenant_names(store, req.scope).await?;
    let invoices: Invoices = store
        .statement_numbers(req.scope, req.period.from, req.period.to)
        .await?
        .into_iter()
        .map(|s| ((s.tenant_id, s.month), s.number))
        .collect();
    Ok(focus::rows(&allocation, &names, req.issuer, &invoices))
}

/// The rows in `format`, with the columns of `version`.
pub fn encode(rows: &[Row], version: Version, format: Format) -> Result<Vec<u8>, StoreError> {
    match format {
        Format::Csv => Ok(focus::csv(rows, version).into_bytes()),
        Format::Parquet => parquet_bytes(rows, version).map_err(|e| {
            StoreError::Internal(format!("encoding the FOCUS export as Parquet: {e}"))
        }),
    }
}

fn schema(version: Version) -> parquet::errors::Result<Type> {
    let mut fields = Vec::new();
    for (_, c) in version.columns() {
        let repetition = if c.nullable {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        };
        let field = match c.kind {
            Kind::Text => Type::primitive_type_builder(c.name, PhysicalType::BYTE_ARRAY)
                .with_logical_type(Some(LogicalType::String)),
            Kind::DateTime => Type::primitive_type_builder(c.name, PhysicalType::INT64)
                .with_logical_type(Some(LogicalType::Timestamp {
                    is_adjusted_to_u_t_c: true,
                    unit: TimeUnit::MILLIS,
                })),
            Kind::Decimal(dp) => {
                Type::primitive_type_builder(c.name, PhysicalType::FIXED_LEN_BYTE_ARRAY)
                    .with_length(16)
                    .with_precision(38)
                    .with_scale(dp as i32)
                    .with_logical_type(Some(LogicalType::Decimal {
                        scale: dp as i32,
                        precision: 38,
                    }))
            }
            Kind::Bool => Type::primitive_type_builder(c.name, PhysicalType::BOOLEAN),
        };
        fields.push(Arc::new(field.with_repetition(repetition).build()?));
    }
    Type::group_type_builder("focus")
        .with_fields(fields)
        .build()
}

/// A decimal as the 16 big-endian bytes of its unscaled value at `dp` places (exact: values carry at most `dp`).
fn decimal_bytes(d: Decimal, dp: u32) -> parquet::errors::Result<FixedLenByteArray> {
    let mut x = d;
    x.rescale(dp);
    if x.scale() != dp || x != d {
        return Err(parquet::errors::ParquetError::General(format!(
            "{d} does not fit {dp} decimal places"
        )));
    }
    Ok(FixedLenByteArray::from(x.mantissa().to_be_bytes().to_vec()))
}

fn parquet_bytes(rows: &[Row], version: Version) -> parquet::errors::Result<Vec<u8>> {
    use parquet::errors::ParquetError;
    let props = Arc::new(
        WriterProperties::builder()
            .set_created_by(format!("eai-gpu {}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let mut writer = SerializedFileWriter::new(Vec::new(), Arc::new(schema(version)?), props)?;
    let mut group = writer.next_row_group()?;
    let mut columns = version.columns();
    while let Some(mut col) = group.next_column()? {
        let Some((i, c)) = columns.next() else {
            return Err(ParquetError::General(
                "more columns than the version's".into(),
            ));
        };
        let cells = rows.iter().map(|r| &r[i]);
        // Definition levels of an OPTIONAL column: 1 for a value, 0 for null.
        let defs: Vec<i16> = cells
            .clone()
            .map(|v| i16::from(!matches!(v, Value::Null)))
            .collect();
        let defs = c.nullable.then_some(&defs[..]);
        let mismatch =
            |v: &Value| ParquetError::General(format!("{}: {v:?} is not a {:?}", c.name, c.kind));
        match c.kind {
            Kind::Text => {
                let mut values = Vec::new();
                for v in cells {
                    match v {
                        Value::Text(s) => values.push(ByteArray::from(s.as_str())),
                        Value::Null if c.nullable => {}
                        other => return Err(mismatch(other)),
                    }
                }
                col.typed::<ByteArrayType>()
                    .write_batch(&values, defs, None)?;
            }
            Kind::DateTime => {
                let mut values = Vec::new();
                for v in cells {
                    match v {
                        Value::DateTime(t) => values.push(t.0),
                        Value::Null if c.nullable => {}
                        other => return Err(mismatch(other)),
                    }
                }
                col.typed::<Int64Type>().write_batch(&values, defs, None)?;
            }
            Kind::Decimal(dp) => {
                let mut values = Vec::new();
                for v in cells {
                    match v {
                        Value::Decimal(d) => values.push(decimal_bytes(*d, dp)?),
                        Value::Null if c.nullable => {}
                        other => return Err(mismatch(other)),
                    }
                }
                col.typed::<FixedLenByteArrayType>()
                    .write_batch(&values, defs, None)?;
            }
            Kind::Bool => {
                let mut values = Vec::new();
                for v in cells {
                    match v {
                        Value::Bool(b) => values.push(*b),
                        Value::Null if c.nullable => {}
                        other => return Err(mismatch(other)),
                    }
                }
                col.typed::<BoolType>().write_batch(&values, defs, None)?;
            }
        }
        col.close()?;
    }
    group.close()?;
    writer.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn formats_are_csv_by_default_or_parquet() {
        assert_eq!(Format::parse(None), Ok(Format::Csv));
        assert_eq!(Format::parse(Some("parquet")), Ok(Format::Parquet));
        let e = Format::parse(Some("xlsx")).expect_err("refused");
        assert_eq!(e.field, "format");
    }

    #[test]
    fn decimals_are_exact_at_their_scale_or_refused() {
        let b = decimal_bytes(Decimal::new(519, 2), 4).expect("fits");
        assert_eq!(
            i128::from_be_bytes(b.data().try_into().expect("16 bytes")),
            51_900
        );
        assert!(decimal_bytes(Decimal::new(1, 7), 4).is_err());
    }

    #[test]
    fn an_empty_export_is_a_readable_file_with_every_column_of_its_version() {
        for version in [Version::V1_2, Version::V1_3] {
            let bytes = encode(&[], version, Format::Parquet).expect("parquet");
            let mut file = tempfile::tempfile().expect("a file");
            std::io::Write::write_all(&mut file, &bytes).expect("written");
            let reader = SerializedFileReader::new(file).expect("readable");
            let schema = reader.metadata().file_metadata().schema_descr();
            assert_eq!(schema.num_columns(), version.columns().count());
            assert_eq!(
                schema.column(0).name(),
                version.columns().next().expect("a column").1.name
            );
            assert_eq!(reader.metadata().file_metadata().num_rows(), 0);
        }
    }
}
