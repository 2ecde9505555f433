//! The structural check of the `run` export against the task world in `wit/task.wit`
//! (`run: func(job: job) -> result<list<u8>, task-error>`), so a mismatch is reported as
//! what differs ("field `payload`: found string, expected list<u8>") rather than as
//! wasmtime's type-check error. `TaskPre::new` remains the authority; this is for messages.
//!
//! Must be kept in step with `wit/task.wit`: `tests/it/validation.rs` accepts real sample
//! components and refuses hand-made wrong ones, so a drift fails there.

use wasmtime::component::Type;
use wasmtime::component::types::{ComponentFunc, ComponentItem};

use crate::error::ValidationError;

/// A WIT type the task world uses, for structural comparison.
enum Shape {
    U8,
    U32,
    U64,
    String,
    List(&'static Shape),
    Record(&'static [(&'static str, Shape)]),
    Variant(&'static [(&'static str, Shape)]),
    Result(&'static Shape, &'static Shape),
}

const JOB: Shape = Shape::Record(&[
    ("id", Shape::U64),
    ("job-type", Shape::String),
    ("tenant", Shape::String),
    ("attempt", Shape::U32),
    ("max-attempts", Shape::U32),
    ("payload", Shape::List(&Shape::U8)),
]);
const RUN_RESULT: Shape = Shape::Result(
    &Shape::List(&Shape::U8),
    &Shape::Variant(&[("retry", Shape::String), ("fatal", Shape::String)]),
);

pub(crate) fn check_run_type(func: &ComponentFunc) -> Result<(), ValidationError> {
    let wrong = |problem: String| Err(ValidationError::RunSignature { problem });
    if func.async_() {
        return wrong("`run` is an async function; the task world's `run` is synchronous".into());
    }
    let params: Vec<(&str, Type)> = func.params().collect();
    let [(_, job)] = params.as_slice() else {
        return wrong(format!(
            "`run` takes {} parameters, expected 1 (job)",
            params.len()
        ));
    };
    if let Err(p) = conforms(job, &JOB) {
        return wrong(format!("parameter `job`: {p}"));
    }
    let results: Vec<Type> = func.results().collect();
    let [result] = results.as_slice() else {
        return wrong(format!(
            "`run` returns {} values, expected 1",
            results.len()
        ));
    };
    if let Err(p) = conforms(result, &RUN_RESULT) {
        return wrong(format!("result: {p}"));
    }
    Ok(())
}

/// `Ok` if `ty` has the shape; otherwise what differs.
fn conforms(ty: &Type, shape: &Shape) -> Result<(), String> {
    let mismatch = || {
        Err(format!(
            "found {}, expected {}",
            render(ty),
            render_shape(shape)
        ))
    };
    match (shape, ty) {
        (Shape::U8, Type::U8)
        | (Shape::U32, Type::U32)
        | (Shape::U64, Type::U64)
        | (Shape::String, Type::String) => Ok(()),
        (Shape::List(elem), Type::List(list)) => {
            conforms(&list.ty(), elem).map_err(|p| format!("list element: {p}"))
        }
        (Shape::Record(fields), Type::Record(record)) => {
            let found: Vec<_> = record.fields().collect();
            if found.len() != fields.len() {
                return mismatch();
            }
            for ((name, shape), field) in fields.iter().zip(&found) {
                if field.name != *name {
                    return Err(format!(
                        "record field `{}` where `{name}` was expected",
                        field.name
                    ));
                }
                conforms(&field.ty, shape).map_err(|p| format!("field `{name}`: {p}"))?;
            }
            Ok(())
        }
        (Shape::Variant(cases), Type::Variant(variant)) => {
            let found: Vec<_> = variant.cases().collect();
            if found.len() != cases.len() {
                return mismatch();
            }
            for ((name, shape), case) in cases.iter().zip(&found) {
                if case.name != *name {
                    return Err(format!(
                        "variant case `{}` where `{name}` was expected",
                        case.name
                    ));
                }
                match &case.ty {
                    Some(ty) => conforms(ty, shape).map_err(|p| format!("case `{name}`: {p}"))?,
                    None => return Err(format!("case `{name}` has no payload, expected string")),
                }
            }
            Ok(())
        }
        (Shape::Result(ok, err), Type::Result(result)) => {
            match result.ok() {
                Some(ty) => conforms(&ty, ok).map_err(|p| format!("ok type: {p}"))?,
                None => return mismatch(),
            }
            match result.err() {
                Some(ty) => conforms(&ty, err).map_err(|p| format!("error type: {p}"))?,
                None => return mismatch(),
            }
            Ok(())
        }
        _ => mismatch(),
    }
}

fn render_shape(shape: &Shape) -> String {
    match shape {
        Shape::U8 => "u8".into(),
        Shape::U32 => "u32".into(),
        Shape::U64 => "u64".into(),
        Shape::String => "string".into(),
        Shape::List(elem) => format!("list<{}>", render_shape(elem)),
        Shape::Record(_) => "record job".into(),
        Shape::Variant(_) => "variant task-error".into(),
        Shape::Result(ok, err) => format!("result<{}, {}>", render_shape(ok), render_shape(err)),
    }
}

/// A short WIT-like rendering of a type, for messages.
fn render(ty: &Type) -> String {
    match ty {
        Type::Bool => "bool".into(),
        Type::S8 => "s8".into(),
        Type::U8 => "u8".into(),
        Type::S16 => "s16".into(),
        Type::U16 => "u16".into(),
        Type::S32 => "s32".into(),
        Type::U32 => "u32".into(),
        Type::S64 => "s64".into(),
        Type::U64 => "u64".into(),
        Type::Float32 => "f32".into(),
        Type::Float64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::List(l) => format!("list<{}>", render(&l.ty())),
        Type::Record(r) => {
            let fields: Vec<String> = r
                .fields()
                .map(|f| format!("{}: {}", f.name, render(&f.ty)))
                .collect();
            format!("record {{ {} }}", fields.join(", "))
        }
        Type::Variant(v) => {
            let cases: Vec<String> = v
                .cases()
                .map(|c| match &c.ty {
                    Some(ty) => format!("{}({})", c.name, render(ty)),
                    None => c.name.to_owned(),
                })
                .collect();
            format!("variant {{ {} }}", cases.join(", "))
        }
        Type::Result(r) => {
            let side = |t: Option<Type>| t.map_or("_".to_owned(), |t| render(&t));
            format!("result<{}, {}>", side(r.ok()), side(r.err()))
        }
        Type::Option(o) => format!("option<{}>", render(&o.ty())),
        Type::Tuple(t) => {
            let items: Vec<String> = t.types().map(|t| render(&t)).collect();
            format!("tuple<{}>", items.join(", "))
        }
        Type::Enum(_) => "enum".into(),
        Type::Flags(_) => "flags".into(),
        Type::Own(_) => "own<resource>".into(),
        Type::Borrow(_) => "borrow<resource>".into(),
        _ => "an unsupported type".into(),
    }
}

pub(crate) fn item_kind(item: &ComponentItem) -> &'static str {
    match item {
        ComponentItem::ComponentFunc(_) => "a function",
        ComponentItem::CoreFunc(_) => "a core function",
        ComponentItem::Module(_) => "a core module",
        ComponentItem::Component(_) => "a component",
        ComponentItem::ComponentInstance(_) => "an interface instance",
        ComponentItem::Type(_) => "a type",
        ComponentItem::Resource(_) => "a resource",
    }
}
