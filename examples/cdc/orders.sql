-- The table Debezium captures (`kraftform postgres up --schema examples/cdc/orders.sql`).
CREATE TABLE orders (
  id   serial PRIMARY KEY,
  item text NOT NULL,
  qty  int  NOT NULL
);
