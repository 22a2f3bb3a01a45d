"""The order-export headers of the common shop platforms and payment providers, per canonical field.

Written from the platforms' public export documentation and admin screens as we know them
(not fetched for this table; check a header against a real export before relying on it):
- Shopify: "Exporting orders" help page (orders CSV: Name, Email, Financial Status, Paid at,
  Currency, Subtotal, Total, Created at, Payment Method, Payment Reference, Id, Payment ID,
  Payment References).
- WooCommerce: the core "Export orders" / Order Export plugins' default columns (Order ID,
  Order Number, Order Date, Order Status, Order Currency, Order Total, Transaction ID,
  Billing Email), also in their German, French and Spanish translations.
- Magento 2 / Adobe Commerce: the sales_order columns a data export carries (increment_id,
  created_at, grand_total, order_currency_code, customer_email, status) and the order grid's
  labels (Purchase Date, Grand Total (Purchased)); the payment's last_trans_id.
- BigCommerce: the "Default" order export template (Order ID, Order Date, Order Status,
  Customer Email, Order Total (inc tax), Order Currency Code, Payment Method, Transaction ID).
- Shopware 5 order export (orderID, ordernumber, ordertime, invoice_amount, currency,
  transactionID, email, status) and Shopware 6 import/export profiles (orderNumber,
  orderDateTime, amountTotal, currency.isoCode, orderCustomer.email).
- PrestaShop: the Orders list export (ID, Reference, Total, Payment, Status, Date; French
  "Référence", "État") and the order payment block (Transaction ID / "ID de transaction").
- Payment providers' references as shops store them: Stripe (charge / payment intent id),
  PayPal ("PayPal Transaction ID"), Adyen ("PSP Reference"), Mollie ("Mollie ID").
Headers are compared normalised (lower case, single spaces): `formats.normalise_header`.
"""

from __future__ import annotations

ORDER_HEADERS: dict[str, tuple[str, ...]] = {
    "order_id": (
        "order id", "order number", "order no", "order #", "order_number", "name", "increment_id", "increment id",
        "ordernumber", "orderid", "order reference", "reference", "référence", "referencia", "id", "bestell-nr.",
        "bestellnr", "bestell-nummer", "auftragsnummer", "n° de commande", "numéro de commande", "id de commande",
        "número de pedido", "id del pedido", "n.º de pedido", "pedido",
    ),
    "ordered_at": (
        "created at", "created_at", "order date", "order_date", "date created", "date_created", "purchase date",
        "ordertime", "orderdatetime", "order date time", "date", "bestelldatum", "bestellzeitpunkt",
        "erstellt am", "datum", "date de commande", "date de création", "fecha del pedido",
        "fecha de pedido", "fecha de creación", "fecha",
    ),
    "amount": (
        "total", "order total", "order total (inc tax)", "order total amount", "order_total", "grand total",
        "grand_total", "grand total (purchased)", "grand total (base)", "invoice_amount", "invoice amount",
        "amounttotal", "amount total", "total paid", "total_paid", "total (tax incl.)", "bestellsumme",
        "gesamtsumme", "gesamt", "summe", "betrag", "rechnungsbetrag", "total de la commande", "total ttc",
        "montant", "montant total", "total del pedido", "importe total", "importe",
    ),
    "currency": (
        "currency", "order currency", "order currency code", "order_currency_code", "currency code",
        "currency.isocode", "currency iso code", "währung", "waehrung", "devise", "monnaie", "moneda", "divisa",
    ),
    "payment_reference": (
        # Shopify: "Payment References" holds the gateway's references; "Payment Reference" is older.
        "payment references", "payment reference", "payment id", "transaction id", "transaction_id",
        "transactionid", "last_trans_id", "last trans id", "payment transaction id", "paypal transaction id",
        "psp reference", "pspreference", "mollie id", "charge id", "stripe charge id", "payment intent",
        "payment intent id", "zahlungsreferenz", "transaktions-id", "transaktionsnummer", "transaktions-nr.",
        "référence de paiement", "id de transaction", "référence de transaction", "referencia de pago",
        "id de transacción", "referencia de la transacción",
    ),
    "customer_email": (
        "email", "e-mail", "customer email", "customer_email", "billing email", "billing e-mail",
        "ordercustomer.email", "kunden-e-mail", "e-mail (rechnung)", "e-mail-adresse", "courriel",
        "e-mail de facturation", "adresse e-mail", "correo", "correo electrónico", "correo electrónico (facturación)",
    ),
    "status": (
        "financial status", "payment status", "order status", "status", "zahlungsstatus", "bestellstatus",
        "statut", "état", "état de la commande", "estado", "estado del pedido",
    ),
}
