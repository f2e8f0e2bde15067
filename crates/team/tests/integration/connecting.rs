//! Connecting: the password from a file or the environment (a wrong one is refused with the server's
//! words, never echoed), TLS verified against the given roots, and migrations that two hubs starting
//! together apply once.

use portcullis_team::schema::{SCHEMA_VERSION, migrate};
use portcullis_team::testing::PrivatePostgres;
use portcullis_team::{TeamDb, connect};
use std::os::unix::fs::PermissionsExt;

fn password_file(dir: &std::path::Path, password: &str) -> std::path::PathBuf {
    let file = dir.join("pw");
    std::fs::write(&file, format!("{password}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_password_is_refused_and_two_hubs_migrate_once() {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let dir = tempfile::tempdir().unwrap();

    let wrong = TeamDb::parse(&pg.url("team"), Some(&password_file(dir.path(), "not-it"))).unwrap();
    let Err(e) = connect(&wrong).await else { panic!("a wrong password connects") };
    let text = e.to_string();
    assert_eq!(e.code(), "team_ledger_unreachable", "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-it"), "{text}");

    let right = TeamDb::parse(&pg.url("team"), Some(&password_file(dir.path(), pg.password()))).unwrap();
    let (mut a, mut b) = (connect(&right).await.unwrap(), connect(&right).await.unwrap());
    let url = right.to_string();
    let (va, vb) = tokio::join!(migrate(&mut a, &url), migrate(&mut b, &url));
    assert_eq!((va.unwrap(), vb.unwrap()), (SCHEMA_VERSION, SCHEMA_VERSION));
    let steps = pg.count("team", "SELECT count(*) FROM portcullis.migrations");
    assert_eq!(steps, i64::from(SCHEMA_VERSION));

    // A database a newer build migrated is refused, not altered.
    pg.sql("team", "INSERT INTO portcullis.migrations (version) VALUES (999)");
    let e = migrate(&mut a, &url).await.unwrap_err().to_string();
    assert!(e.contains("newer than this build"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_is_verified_against_the_roots_given() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert =
        rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&key).unwrap();
    let pg = PrivatePostgres::start_with_tls(&cert.pem(), &key.serialize_pem());
    pg.create_db("team");
    let dir = tempfile::tempdir().unwrap();
    let pw = password_file(dir.path(), pg.password());
    let roots = dir.path().join("ca.pem");
    std::fs::write(&roots, cert.pem()).unwrap();

    let db = TeamDb::parse(&pg.tls_url("team", &roots), Some(&pw)).unwrap();
    let client = connect(&db).await.unwrap();
    let ssl: bool = client
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    assert!(ssl, "the connection is not encrypted");

    // Another certificate as the root: the server's does not verify, and nothing falls back to plain.
    let other_key = rcgen::KeyPair::generate().unwrap();
    let other =
        rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&other_key).unwrap();
    std::fs::write(&roots, other.pem()).unwrap();
    let db = TeamDb::parse(&pg.tls_url("team", &roots), Some(&pw)).unwrap();
    let Err(e) = connect(&db).await else { panic!("an unverified server connects") };
    let e = e.to_string();
    assert!(e.contains("certificate") || e.contains("Certificate"), "{e}");
}
