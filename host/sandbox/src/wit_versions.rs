//! Test of `wit/`'s versioning rule (`wit/README.md`) on the WIT text itself, read with
//! `wit-parser`: each contract's directory (`wit/`, `wit/v0.2/`, `wit/v0.3/`) parses and
//! resolves with its vendored deps; every world `task` exports `run` with the same type
//! (types compared by structure and name, across packages); the interfaces a version
//! keeps are unchanged and the ones it changes only grow as agreed; and the imports of
//! each world are the ones [`crate::contract`] assigns to that version.
//!
//! Must not: be compiled outside `cargo test`, or look at anything but the WIT text and
//! `crate::contract`'s tables.

use std::path::{Path, PathBuf};

use wit_parser::{
    Function, InterfaceId, Resolve, Type, TypeDefKind, TypeOwner, WorldId, WorldItem, WorldKey,
};

use crate::contract::{self, Contract};

/// One resolved contract directory and its world `task`.
struct Wit {
    resolve: Resolve,
    world: WorldId,
}

fn wit_dir(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../wit")
        .join(relative)
}

fn load(relative: &str) -> Wit {
    let dir = wit_dir(relative);
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(&dir)
        .unwrap_or_else(|e| panic!("{} does not resolve: {e:#}", dir.display()));
    let world = resolve
        .select_world(&[package], Some("task"))
        .unwrap_or_else(|e| panic!("{} has no world `task`: {e:#}", dir.display()));
    Wit { resolve, world }
}

impl Wit {
    /// `ns:pkg/iface@version` of every interface the world imports, its dependencies
    /// included (as a component built against it may import them).
    fn imported_interfaces(&self) -> Vec<String> {
        self.resolve.worlds[self.world]
            .imports
            .iter()
            .filter_map(|(key, item)| match (key, item) {
                (WorldKey::Interface(id), WorldItem::Interface { .. }) => {
                    Some(self.resolve.id_of(*id).expect("a named interface"))
                }
                _ => None,
            })
            .collect()
    }

    /// The world's `run` export, rendered.
    fn run(&self) -> String {
        let world = &self.resolve.worlds[self.world];
        let exports: Vec<String> = world
            .exports
            .keys()
            .map(|k| self.resolve.name_world_key(k))
            .collect();
        assert_eq!(exports, ["run"], "the world exports only `run`");
        match world.exports.get(&WorldKey::Name("run".into())) {
            Some(WorldItem::Function(f)) => self.function(f),
            other => panic!("`run` is not a function: {other:?}"),
        }
    }

    /// The interface `sluice:task/NAME` of this version.
    fn interface(&self, name: &str) -> InterfaceId {
        let package = self.resolve.worlds[self.world].package.expect("a package");
        self.resolve.packages[package].interfaces[name]
    }

    /// Every function of `sluice:task/NAME`, rendered, in declaration order.
    fn functions(&self, name: &str) -> Vec<String> {
        let iface = &self.resolve.interfaces[self.interface(name)];
        iface.functions.values().map(|f| self.function(f)).collect()
    }

    /// The named type `ty` of `sluice:task/NAME`, rendered.
    fn type_of(&self, name: &str, ty: &str) -> String {
        let iface = &self.resolve.interfaces[self.interface(name)];
        let id = iface.types[ty];
        self.render(&Type::Id(id))
    }

    fn function(&self, f: &Function) -> String {
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, self.render(&p.ty)))
            .collect();
        let result = f
            .result
            .as_ref()
            .map_or(String::new(), |t| format!(" -> {}", self.render(t)));
        format!("{}({}){result}", f.name, params.join(", "))
    }

    /// A type by structure, with the names of its named parts (a renamed field or case,
    /// or a renamed record, is a different type); resources by name only.
    fn render(&self, ty: &Type) -> String {
        let id = match ty {
            Type::Id(id) => *id,
            other => return format!("{other:?}").to_lowercase(),
        };
        let def = &self.resolve.types[id];
        let list = |items: Vec<String>| items.join(", ");
        let opt = |t: &Option<Type>| t.as_ref().map_or("_".to_owned(), |t| self.render(t));
        let body = match &def.kind {
            TypeDefKind::Record(r) => format!(
                "record {{ {} }}",
                list(
                    r.fields
                        .iter()
                        .map(|f| format!("{}: {}", f.name, self.render(&f.ty)))
                        .collect()
                )
            ),
            TypeDefKind::Variant(v) => format!(
                "variant {{ {} }}",
                list(
                    v.cases
                        .iter()
                        .map(|c| match &c.ty {
                            Some(t) => format!("{}({})", c.name, self.render(t)),
                            None => c.name.clone(),
                        })
                        .collect()
                )
            ),
            TypeDefKind::Enum(e) => format!(
                "enum {{ {} }}",
                list(e.cases.iter().map(|c| c.name.clone()).collect())
            ),
            TypeDefKind::Flags(f) => format!(
                "flags {{ {} }}",
                list(f.flags.iter().map(|c| c.name.clone()).collect())
            ),
            TypeDefKind::Tuple(t) => format!(
                "tuple<{}>",
                list(t.types.iter().map(|t| self.render(t)).collect())
            ),
            TypeDefKind::Option(t) => format!("option<{}>", self.render(t)),
            TypeDefKind::Result(r) => format!("result<{}, {}>", opt(&r.ok), opt(&r.err)),
            TypeDefKind::List(t) => format!("list<{}>", self.render(t)),
            TypeDefKind::Type(t) => self.render(t),
            // Resources and handles are compared by name (the task world has none).
            other => other.as_str().to_owned(),
        };
        match (&def.name, &def.owner) {
            (Some(name), TypeOwner::Interface(_) | TypeOwner::World(_)) => {
                format!("{name}: {body}")
            }
            _ => body,
        }
    }
}

const RUN_01: &str = "run(job: job: record { id: u64, job-type: string, tenant: string, \
    attempt: u32, max-attempts: u32, payload: list<u8> }) -> result<list<u8>, \
    task-error: variant { retry(string), fatal(string) }>";

#[test]
fn every_contract_exports_run_with_the_type_of_0_1() {
    for dir in ["", "v0.2", "v0.3"] {
        assert_eq!(load(dir).run(), RUN_01, "wit/{dir}");
    }
}

#[test]
fn contract_0_3_keeps_host_and_secrets_and_grows_jobs_by_what_was_agreed() {
    let (v2, v3) = (load("v0.2"), load("v0.3"));
    for name in ["host", "secrets"] {
        assert_eq!(v3.functions(name), v2.functions(name), "interface {name}");
    }
    // jobs: the options gain `concurrency-key` (issue #38) at the end, the errors are
    // 0.2's, and `enqueue` returns the child's id (issue #43: fan-in).
    let options = |c: &Wit| c.type_of("jobs", "enqueue-options");
    let grown = options(&v2).replacen(" }", ", concurrency-key: option<string> }", 1);
    assert_eq!(options(&v3), grown);
    let errors = |c: &Wit| c.type_of("jobs", "enqueue-error");
    assert_eq!(errors(&v3), errors(&v2));
    let enqueue = v3.functions("jobs");
    assert_eq!(enqueue.len(), 1);
    assert!(
        enqueue[0].starts_with("enqueue(job-type: string, payload: list<u8>, options: ")
            && enqueue[0].ends_with(&format!(" -> result<u64, {}>", errors(&v3))),
        "{}",
        enqueue[0]
    );
}

#[test]
fn contract_0_3_adds_durable_waits_and_snooze() {
    let v3 = load("v0.3");
    let wait_error = "wait-error: variant { not-durable, invalid(string) }";
    let outcome = "child-outcome: record { id: u64, state: child-state: enum { completed, \
        dead, cancelled }, output: option<list<u8>>, error: option<string> }";
    assert_eq!(
        v3.functions("durable"),
        [
            "sleep(duration-ms: u64)".to_owned(),
            format!(
                "await-signal(name: string, timeout-ms: option<u64>) -> \
                 result<option<list<u8>>, {wait_error}>"
            ),
            format!("await-jobs(ids: list<u64>) -> result<list<{outcome}>, {wait_error}>"),
        ]
    );
    assert_eq!(v3.functions("flow"), ["snooze(delay-ms: u64)"]);
}

#[test]
fn each_world_imports_what_its_contract_provides() {
    let sluice = |c: &Wit| -> Vec<String> {
        c.imported_interfaces()
            .into_iter()
            .filter(|name| name.starts_with("sluice:task/"))
            .collect()
    };
    let v1 = load("");
    assert_eq!(sluice(&v1), ["sluice:task/host@0.1.0"]);
    assert_eq!(
        contract::required(&v1.imported_interfaces()),
        Ok(Contract::V0_1)
    );

    let v2 = load("v0.2");
    assert_eq!(
        sluice(&v2),
        ["host", "secrets", "jobs"].map(|i| format!("sluice:task/{i}@0.2.0"))
    );
    assert_eq!(
        contract::required(&v2.imported_interfaces()),
        Ok(Contract::V0_2)
    );

    let v3 = load("v0.3");
    assert_eq!(
        sluice(&v3),
        ["host", "secrets", "jobs", "durable", "flow"].map(|i| format!("sluice:task/{i}@0.3.0"))
    );
    let all = v3.imported_interfaces();
    assert!(
        all.iter().any(|i| i == "wasi:http/outgoing-handler@0.2.12"),
        "{all:?}"
    );
    // Linked: a component built against 0.3 needs 0.3, and its WASI and `wasi:http`
    // imports are provided as they are to 0.2 components.
    for name in &all {
        let provided = contract::providing(name);
        if name.starts_with("sluice:task/") {
            assert_eq!(provided, Some(Contract::V0_3), "{name}");
        } else {
            assert!(provided.is_some_and(|c| c <= Contract::V0_2), "{name}");
        }
    }
    assert_eq!(contract::required(&all), Ok(Contract::V0_3), "{all:?}");
}
