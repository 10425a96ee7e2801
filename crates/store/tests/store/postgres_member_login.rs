use super::postgres_harness::fresh;
use super::*;
use eai_store::postgres::scratch::with_dbname;
use eai_store::postgres::{PgStore, SERVICE_ROLE};
use eai_store::{PolicyStore, SampleStore};
use tokio_postgres::NoTls;

#[tokio::test]
async fn a_member_of_the_service_role_serves_a_database_an_owner_migrated() {
    let (db, owner) = fresh().await;
    owner.create_policy(&spec("p"), &audit()).await.unwrap();
    let (admin, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
    tokio::spawn(connection);
    let login = format!("eai_t_login_{}", &Uuid::new_v4().simple().to_string()[..12]);
    admin
        .batch_execute(&format!("CREATE ROLE {login} LOGIN IN ROLE {SERVICE_ROLE}"))
        .await
        .unwrap();
    // The same server and database, as the new login.
    let (_, rest) = db.url().split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let url = with_dbname(&format!("postgres://{login}@{host}"), db.name()).unwrap();
    let served = PgStore::open(&url).await;
    let result = async {
        let s = served?;
        s.insert_samples(fleet("vllm-a", 1, T0, T0 + H), &audit())
            .await?;
        let n = s
            .allocation_usage(ts(T0), ts(T0 + H), &[])
            .await?
            .rollups
            .len();
        let p = s.policies().await?.len();
        let sessions: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND datname = $2",
                &[&login, &db.name()],
            )
            .await
            .map_err(|e| StoreError::Internal(e.to_string()))?
            .get(0);
        Ok::<_, StoreError>((n, p, sessions > 0))
    }
    .await;
    let _ = admin
        .batch_execute(&format!("DROP OWNED BY {login}; DROP ROLE {login}"))
        .await;
    assert_eq!(result.unwrap(), (1, 1, true), "served by the member login");
}
